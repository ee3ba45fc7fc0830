"""Loading: delta lines of every form rebuild, and top-level values are found along the
chain of bases without rebuilding messages."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

import cassette
from cassette.dataset.validate import validate
from cassette.storage.index import load_index

HEADER = {
    "type": "header",
    "format": "rollout-cassette",
    "version": 1,
    "created_at": "2026-01-01T00:00:00.000Z",
    "producer": "rollout-cassette/0.1.0",
    "meta": {},
}


def test_lines_with_a_list_of_same_keys_and_error_null_still_replay(tmp_path: Path) -> None:
    """The form the first recorder wrote: ``same`` as a list, ``"error": null`` written."""
    tools = [{"type": "function", "function": {"name": "t"}}]
    first = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": "yo"}]}
    matcher = cassette.Matcher()
    lines = [
        HEADER,
        {
            "type": "interaction",
            "env_index": 0,
            "channel": "llm",
            "step": 0,
            "request": first,
            "request_sha256": matcher.digest(first),
            "response": {"choices": [{"message": {"role": "assistant", "content": "yo"}}]},
            "error": None,
            "meta": {},
        },
        {
            "type": "interaction",
            "env_index": 0,
            "channel": "llm",
            "step": 1,
            "delta": {"base": 0, "keep": 1, "same": ["tools"]},
            "request": {"messages": [{"$ref": ["choices", 0, "message"]}], "model": "m"},
            "request_sha256": matcher.digest(second),
            "response": {"choices": [{"message": {"role": "assistant", "content": "ok"}}]},
            "error": None,
            "meta": {},
        },
    ]
    path = tmp_path / "old.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    with cassette.open(path, "replay") as cas:
        assert cas.call(first, live=dict)["choices"][0]["message"]["content"] == "yo"
        assert cas.call(second, live=dict)["choices"][0]["message"]["content"] == "ok"
        assert cas.index.entries[(0, "llm", 1)].full_request() == second


def test_param_follows_the_bases_as_far_as_same_reaches(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    msgs = [{"role": "user", "content": "hi"}]
    with cassette.open(path, "record") as cas:
        cas.call({"model": "a", "messages": msgs, "seed": 1}, live=dict)
        cas.call({"model": "a", "messages": msgs, "seed": 1}, live=dict)  # same: "*"
        cas.call({"model": "b", "messages": msgs}, live=dict)  # seed dropped: a list
        cas.call({"model": "b", "messages": msgs}, live=dict)
    entries = load_index([path]).entries
    assert [entries[(0, "llm", i)].param("model") for i in range(4)] == ["a", "a", "b", "b"]
    assert [entries[(0, "llm", i)].param("seed") for i in range(4)] == [1, 1, None, None]


def _one_call(path: Path) -> list[dict[str, object]]:
    with cassette.open(path, "record") as cas:
        cas.call({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, live=dict)
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def test_the_reader_and_validate_judge_a_line_alike(tmp_path: Path) -> None:
    """One place decides whether a line is valid: what validate reports as a fault of a
    line, loading refuses, naming the same line."""
    path = tmp_path / "a.jsonl"
    header, line = _one_call(path)
    bad = [
        {**line, "error": {"type": "E", "message": "m", "extra": 1}},  # not an ErrorInfo
        {**line, "request_sha256": "Z" * 64},  # not hex
        {"type": "outcome", "env_index": 0, "terminated": 1},  # an int, not a bool
    ]
    for wrong in bad:
        path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in (header, wrong)))
        faults = validate(path).faults
        assert [f.line for f in faults] == [2], faults
        with pytest.raises(cassette.CassetteFormatError, match=r"a\.jsonl:2: "):
            load_index([path])


def test_a_line_with_its_response_before_its_request_replays(tmp_path: Path) -> None:
    """A line starting as the recorder writes it but in another key order is read whole."""
    path = tmp_path / "a.jsonl"
    header, line = _one_call(path)
    moved = {k: line[k] for k in ("type", "env_index", "channel", "step", "response")}
    moved.update((k, v) for k, v in line.items() if k not in moved)
    path.write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(moved) + b"\n")
    with cassette.open(path, "replay") as cas:
        request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        assert cas.call(request, live=lambda: {"x": 1}) == line["response"]
