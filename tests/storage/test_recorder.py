"""The recorder's delta encoding against what callers really do between calls."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cassette
from cassette.dataset.validate import validate

SECRET = "sk-fakeRecorderTestKey0123456789abcd"  # planted, not a real key


def lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(raw) for raw in path.read_bytes().splitlines()[1:]]


def rebuilt(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(recorded hash, hash of the request rebuilt from the file) of every interaction."""
    with cassette.open(path, "replay") as cas:
        return [(e.sha or "", cas.matcher.digest(full)) for e, full in cas.index.iter_full()]


def answer(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def test_editing_messages_in_place_after_a_call_cannot_skew_the_next_delta(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.jsonl"
    messages: list[dict[str, Any]] = [{"role": "user", "content": "first question"}]
    with cassette.open(path, "record") as cas:
        response = answer("first answer")
        cas.call({"model": "m", "messages": messages}, live=lambda: response)
        # the caller edits what it sent and what it got back, in place
        messages[0]["content"] = "first question, edited"
        reply = response["choices"][0]["message"]
        reply["content"] = "first answer, trimmed"
        messages += [reply, {"role": "user", "content": "second"}]
        cas.call({"model": "m", "messages": messages}, live=lambda: answer("second answer"))
    second = lines(path)[1]
    # neither edited message may be taken from the first line, where the old text is
    assert second["delta"]["keep"] == 0
    assert second["request"]["messages"][1] == {
        "role": "assistant",
        "content": "first answer, trimmed",
    }
    assert all(want == got for want, got in rebuilt(path))
    with cassette.open(path, "replay") as cas:
        cas.call(
            {"model": "m", "messages": [{"role": "user", "content": "first question"}]}, live=dict
        )
        assert cas.call({"model": "m", "messages": messages}, live=dict) == answer("second answer")


def test_a_secret_in_the_conversation_is_scrubbed_once_and_size_stays_linear(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.jsonl"
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"my key is {SECRET}"}]
    with cassette.open(path, "record") as cas:
        for _ in range(30):
            cas.call({"model": "m", "messages": list(messages)}, live=lambda: answer("ok"))
            messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "x"}]
    raw = path.read_bytes()
    assert SECRET.encode() not in raw
    recorded = lines(path)
    assert recorded[0]["meta"]["redacted"] == 1
    assert all("redacted" not in line["meta"] for line in recorded[1:])
    assert all(line["delta"]["keep"] == 1 + 2 * (line["step"] - 1) for line in recorded[1:])
    sizes = [len(orjson.dumps(line)) for line in recorded[1:]]
    assert max(sizes) - min(sizes) < 20, sizes  # a line holds what is new, not the history
    with cassette.open(path, "replay") as cas:  # the hash is of the live request
        for step in range(30):
            cas.call({"model": "m", "messages": messages[: 1 + 2 * step]}, live=dict)
        full = cas.index.entries[(0, "llm", 29)].full_request()
    assert full["messages"][0]["content"] == "my key is [REDACTED]"
    result = validate(path)
    assert result.ok, result.faults


def test_only_changed_parameters_are_written_and_a_dropped_one_is_named(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.jsonl"
    tools = [{"type": "function", "function": {"name": "t"}}]
    msgs: list[Any] = [{"role": "user", "content": "hi"}]
    requests = [
        {"model": "m", "messages": msgs, "tools": tools, "temperature": 0.5},
        {"model": "m", "messages": msgs, "tools": tools, "temperature": 0.7},
        {"model": "m", "messages": msgs, "tools": tools, "temperature": 0.7, "seed": 1},
        {"model": "m", "messages": msgs, "seed": 1},  # tools and temperature dropped
    ]
    with cassette.open(path, "record") as cas:
        for request in requests:
            cas.call(request, live=lambda: answer("ok"))
    stored = [(line.get("delta"), line["request"]) for line in lines(path)]
    assert stored[1] == ({"base": 0, "keep": 1, "same": "*"}, {"messages": [], "temperature": 0.7})
    assert stored[2] == ({"base": 1, "keep": 1, "same": "*"}, {"messages": [], "seed": 1})
    assert stored[3] == ({"base": 2, "keep": 1, "same": ["model", "seed"]}, {"messages": []})
    with cassette.open(path, "replay") as cas:
        fulls = [full for _, full in cas.index.iter_full()]
        assert fulls == requests
        assert [cas.index.entries[(0, "llm", i)].param("seed") for i in range(4)] == [
            None,
            None,
            1,
            1,
        ]
    assert all(want == got for want, got in rebuilt(path))


def test_the_answer_is_referenced_whatever_its_key_order_and_empty_fields(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    message = {"content": "sure", "refusal": None, "role": "assistant", "annotations": []}
    first = [{"role": "user", "content": "hi"}]
    with cassette.open(path, "record") as cas:
        cas.call({"messages": first}, live=lambda: {"choices": [{"message": message}]})
        again = {"role": "assistant", "content": "sure"}  # re-serialised by the caller
        cas.call({"messages": [*first, again]}, live=lambda: answer("ok"))
    second = lines(path)[1]
    assert second["request"]["messages"] == [
        {"$ref": ["choices", 0, "message"], "omit": ["annotations", "refusal"]}
    ]
    assert all(want == got for want, got in rebuilt(path))


def test_kept_messages_rebuild_byte_for_byte(tmp_path: Path) -> None:
    """1 == 1.0 == True in Python, but not in JSON: such a message is written anew."""
    path = tmp_path / "a.jsonl"
    base = [{"role": "tool", "content": "n", "extra": 1}]
    with cassette.open(path, "record") as cas:
        cas.call({"messages": base}, live=lambda: answer("a"))
        cas.call({"messages": [{**base[0], "extra": 1.0}]}, live=lambda: answer("b"))
        cas.call({"messages": [{**base[0], "extra": True}]}, live=lambda: answer("c"))
    assert [line["delta"]["keep"] for line in lines(path)[1:]] == [0, 0]
    assert all(want == got for want, got in rebuilt(path))


# Property: whatever a caller sends call after call, every request rebuilds from the file
# to the hash it was recorded under, and replay serves every step.

_text = st.sampled_from(["a", "b", "hello", "1.0", SECRET, "[REDACTED]"])
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": _text},
    optional={"n": st.sampled_from([1, 1.0, True, None]), "$ref": st.just(["choices", 0])},
)
_edit = st.one_of(
    st.tuples(st.just("append"), st.lists(_message, max_size=3)),
    st.tuples(st.just("answer"), st.booleans()),
    st.tuples(st.just("mutate"), _text),
    st.tuples(st.just("truncate"), st.integers(0, 4)),
    st.tuples(st.just("param"), st.sampled_from(["temperature", "tools", "api_key"])),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(_edit, min_size=1, max_size=12))
def test_any_sequence_of_requests_rebuilds_to_its_hash(
    tmp_path_factory: Any, edits: list[tuple[str, Any]]
) -> None:
    path = tmp_path_factory.mktemp("prop") / "a.jsonl"
    request: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "go"}]}
    sent: list[dict[str, Any]] = []
    last: dict[str, Any] = answer("first")
    with cassette.open(path, "record") as cas:
        for kind, arg in edits:
            msgs = request["messages"]
            if kind == "append":
                msgs.extend(arg)
            elif kind == "answer":
                reply = dict(last["choices"][0]["message"])
                msgs.append(reply if arg else {**reply, "refusal": None})
            elif kind == "mutate" and msgs:
                msgs[-1]["content"] = arg  # in place: the previous request held this dict
            elif kind == "truncate":
                del msgs[arg:]
            elif kind == "param":
                if arg in request:
                    del request[arg]
                else:
                    request[arg] = {"temperature": 0.7, "tools": [1], "api_key": SECRET}[arg]
            sent.append(copy.deepcopy(request))
            last = answer(f"answer {len(sent)}")
            cas.call(request, live=lambda r=last: r)
    assert SECRET.encode() not in path.read_bytes()
    with cassette.open(path, "replay") as cas:
        for want in sent:
            cas.call(want, live=dict)
        scrubbed = {e.step for e, full in cas.index.iter_full() if "[REDACTED]" in str(full)}
    for step, (want, got) in enumerate(rebuilt(path)):
        if step not in scrubbed:
            assert want == got, step


def test_delta_bases_are_bounded_and_an_evicted_episode_is_written_whole(
    tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setattr("cassette.storage.recorder.BASES", 4)
    path = tmp_path / "a.jsonl"
    first = [{"role": "user", "content": "hi"}]
    second = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]
    with cassette.open(path, "record") as cas:
        for env in range(6):  # episodes 0 and 1 are the least recent when 4 and 5 start
            cas.call({"messages": first}, live=lambda: answer("ok"), env_index=env)
        for env in (5, 0):
            cas.call({"messages": second}, live=lambda: answer("done"), env_index=env)
    recorded = {(line["env_index"], line["step"]): line for line in lines(path)}
    assert recorded[(5, 1)]["delta"]["keep"] == 1  # still a base: a delta
    assert "delta" not in recorded[(0, 1)]  # evicted: the whole request
    assert recorded[(0, 1)]["request"]["messages"] == second
    assert all(want == got for want, got in rebuilt(path))
