"""The secret corpus (tests/helpers/fake_secrets.py) planted everywhere a line can hold it:
request headers and bodies, tool-call arguments, dict keys, responses, streamed chunks
split at every offset, recorded errors and outcomes. The bytes of the written file hold
none of it, replay still works, and what only looks a little like a secret is kept."""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cassette
from cassette import CassetteError, RecordedError
from cassette.format.codec import dumps
from cassette.redact import REDACTED, Redactor
from tests.helpers.fake_secrets import NON_SECRETS, SAMPLES, Sample, by_kind

KINDS = by_kind()
ALL_SECRETS = [s for sample in SAMPLES for s in sample.secrets]
R = Redactor()
Json = dict[str, Any]


def leaks(data: bytes | str, samples: list[Sample] = SAMPLES) -> list[str]:
    text = data.decode() if isinstance(data, bytes) else data
    return [s for sample in samples for s in sample.secrets if s in text]


def file_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.name.endswith(".gz") else raw


# --- every sample, alone ------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_is_scrubbed_wherever_it_stands(kind: str) -> None:
    for sample in KINDS[kind]:
        for text in (
            sample.text,
            f"here: {sample.text} (keep it safe)",
            f"prefix_{sample.text}",  # a token right after "_"
            f"\n{sample.text}\n",
        ):
            for value in (
                {"content": text},
                {"arguments": json.dumps({"note": text})},  # JSON in a string
                {"arguments": json.dumps({"inner": json.dumps({"note": text})})},
                {text: 1},  # a secret as a dict key
            ):
                raw = dumps(value)
                assert R.hits(raw), (kind, value)  # the gate never rules it out
                out, count = R.redact(value)
                assert count >= 1 and not leaks(dumps(out), [sample]), (kind, value)


def test_what_merely_looks_like_a_secret_is_kept() -> None:
    for text in NON_SECRETS:
        assert R.redact_text(text) == (text, 0), text
    line = {"usage": {"prompt_tokens": 3, "completion_tokens": 5}, "max_tokens": 9}
    logprobs = {"content": [{"token": "Hello", "logprob": -0.1, "top_logprobs": []}]}
    assert R.redact({**line, "logprobs": logprobs}) == ({**line, "logprobs": logprobs}, 0)


def test_secret_key_names_by_suffix_and_spelling() -> None:
    for key in ("db_password", "X-Custom-Token", "x-api-key", "stripe_secret", "DB-PWD"):
        assert R.redact({key: "plain value"}) == ({key: REDACTED}, 1), key
    for key in ("token", "max_tokens", "tokens", "keyboard", "password_hint_shown"):
        assert R.redact({key: "v"})[1] == 0, key
    # two secrets as keys of one dict stay two keys
    a, b = KINDS["openai"][0].text, KINDS["openai"][1].text
    out, count = R.redact({a: 1, b: 2})
    assert count == 2 and sorted(out.values()) == [1, 2] and not leaks(dumps(out))


def test_basic_needs_base64_of_user_colon_password() -> None:
    assert R.redact_text("Basic dXNlcjpwYXNzd29yZA==")[1] == 1
    for prose in ("basic understanding", "Basic Understanding of Python", "basic cable"):
        assert R.redact_text(prose) == (prose, 0)


def test_url_passwords_keep_scheme_user_and_host() -> None:
    out, _ = R.redact_text("DSN postgres://app:FAKE-pw@db.internal:5432/x and more")
    assert out == f"DSN postgres://app:{REDACTED}@db.internal:5432/x and more"


@settings(max_examples=300)
@given(st.sampled_from(SAMPLES), st.text(max_size=30), st.text(max_size=30))
def test_any_surroundings_pass_the_gate_and_are_scrubbed(
    sample: Sample, before: str, after: str
) -> None:
    text = f"{before} {sample.text} {after}"
    for value in ({"t": text}, {"args": json.dumps({"t": text})}):
        assert R.hits(dumps(value))
        assert not leaks(dumps(R.redact(value)[0]), [sample])


# --- streams --------------------------------------------------------------------------------


def _chat(field: str) -> Callable[[str], Json]:
    def chunk(piece: str) -> Json:
        if field == "arguments":
            call = {"index": 0, "function": {"arguments": piece}}
            delta: Json = {"tool_calls": [call]}
        else:
            delta = {field: piece}
        return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}  # fmt: skip

    return chunk


def _responses(kind: str) -> Callable[[str], Json]:
    def event(piece: str) -> Json:
        return {"type": f"response.{kind}.delta", "item_id": "msg_1", "output_index": 0,
                "content_index": 0, "delta": piece, "sequence_number": 7}  # fmt: skip

    return event


def _anthropic(piece: str) -> Json:
    return {"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": piece}}  # fmt: skip


FORMATS: dict[str, Callable[[str], Json]] = {
    "chat.content": _chat("content"),
    "chat.refusal": _chat("refusal"),
    "chat.tool_arguments": _chat("arguments"),
    "responses.output_text": _responses("output_text"),
    "responses.function_call_arguments": _responses("function_call_arguments"),
    "anthropic.input_json": _anthropic,
}


def _text_of(chunk: Json) -> str:
    if "choices" in chunk:
        delta = chunk["choices"][0]["delta"]
        return str(delta["tool_calls"][0]["function"]["arguments"] if "tool_calls" in delta
                   else next(iter(delta.values())))  # fmt: skip
    if "partial_json" in chunk.get("delta", {}):
        return str(chunk["delta"]["partial_json"])
    return str(chunk["delta"])


def scrub_stream(pieces: list[str], make: Callable[[str], Json]) -> tuple[list[Json], bytes]:
    line = {"type": "interaction", "response": {"chunks": [make(p) for p in pieces]}}
    out, _ = R.redact_line(line, dumps(line), dumps)
    return out["response"]["chunks"], dumps(out)


def check_stream(sample: Sample, text: str, pieces: list[str], fmt: str) -> None:
    chunks, raw = scrub_stream(pieces, FORMATS[fmt])
    assert not leaks(raw, [sample]), (fmt, pieces)
    assert len(chunks) == len(pieces)  # replay yields as many chunks, in order
    assert "".join(_text_of(c) for c in chunks) == R.redact_text(text)[0], (fmt, pieces)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_secret_split_at_every_offset_never_reaches_the_line(fmt: str) -> None:
    for _, samples in sorted(KINDS.items()):
        sample = samples[0]
        text = f"Your value is {sample.text}. Thanks"
        for cut in range(1, len(text)):
            check_stream(sample, text, [text[:cut], text[cut:]], fmt)
        check_stream(sample, text, list(text), fmt)  # one character a chunk: every offset
        head, sep, tail = text.partition(" is ")
        check_stream(sample, text, ["", head + sep, "", tail, ""], fmt)  # empty chunks too


def test_every_sample_one_character_a_chunk() -> None:
    for sample in SAMPLES:
        text = f"start {sample.text} end"
        check_stream(sample, text, list(text), "chat.content")


@settings(max_examples=300)
@given(st.sampled_from(SAMPLES), st.sampled_from(sorted(FORMATS)), st.data())
def test_random_cuts_never_leak(sample: Sample, fmt: str, data: st.DataObject) -> None:
    text = f"a {sample.text} b"
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(text) - 1), max_size=8))))
    pieces = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    check_stream(sample, text, pieces, fmt)


def test_interleaved_tool_calls_are_separate_streams() -> None:
    secret = KINDS["openai"][0].text
    half = len(secret) // 2
    chunk = _chat("arguments")
    first, second = chunk('{"k": "' + secret[:half]), chunk(secret[half:] + '"}')
    other = chunk("unrelated")
    other["choices"][0]["delta"]["tool_calls"][0]["index"] = 1  # call 1 between call 0's halves
    line = {"response": {"chunks": [first, other, second]}}
    out, count = R.redact_line(line, dumps(line), dumps)
    assert (
        count >= 1
        and secret not in dumps(out).decode()
        and secret[:half] not in dumps(out).decode()
    )
    assert _text_of(out["response"]["chunks"][1]) == "unrelated"


# --- through a cassette ---------------------------------------------------------------------


def _every_place(i: int) -> tuple[Json, Json, str, Json]:
    """(request, response, error message, outcome info) holding every sample."""
    texts = [s.text for s in SAMPLES]
    block = "\n".join(texts)
    args = json.dumps({"password": KINDS["json_argument"][0].secrets[0], "notes": block})
    request = {
        "model": "m",
        "headers": {"X-Custom-Token": texts[0], "X-Api-Key": "plain-9", "X-Tenant": "t-1",
                    "Content-Type": "application/json", "Authorization": texts[1]},
        "extra_headers": {"X-Anything": block},
        "messages": [
            {"role": "user", "content": f"step {i}: {block}"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_abc123", "type": "function",
                 "function": {"name": "login", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_abc123", "content": block},
        ],
        "metadata": {texts[2]: "a secret as a key", "db_password": "hunter2-fake"},
    }  # fmt: skip
    response = {
        "id": "chatcmpl-AbC123dEf456",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": block}}],
        "sha": NON_SECRETS[0],
    }
    return request, response, f"upstream said: {block}", {"log": block, "note": NON_SECRETS[6]}


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz"])
def test_the_corpus_planted_everywhere_never_reaches_the_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    request, response, message, info = _every_place(0)
    text = "Streamed: " + "\n".join(s.text for s in SAMPLES)
    chunks = [_chat("content")(ch) for ch in text]  # one character a chunk
    stream_req = {"model": "m", "messages": [{"role": "user", "content": "stream"}]}

    def fail() -> Json:
        raise RuntimeError(message)

    with cassette.open(path, "record") as cas:
        assert cas.call(request, live=lambda: response) is response
        with pytest.raises(RuntimeError):
            cas.call({"model": "m", "messages": [{"role": "user", "content": "x"}]}, live=fail)
        got = list(cas.stream(stream_req, live=lambda: iter(chunks)))
        assert got == chunks  # the caller sees the live chunks, as they came
        cas.outcome(0, reward=1.0, info=info)
    raw = file_bytes(path)
    assert leaks(raw) == []
    assert b"hunter2-fake" not in raw and b"plain-9" not in raw and b"t-1" not in raw
    for kept in (NON_SECRETS[0], "call_abc123", "chatcmpl-AbC123dEf456", "application/json"):
        assert kept.encode() in raw
    assert REDACTED.encode() in raw

    with cassette.open(path, "replay") as cas:  # the hashes are of the live requests
        served = cas.call(request, live=lambda: {})
        assert not leaks(dumps(served)) and served["sha"] == NON_SECRETS[0]
        with pytest.raises(RecordedError) as caught:
            cas.call({"model": "m", "messages": [{"role": "user", "content": "x"}]}, live=fail)
        assert not leaks(str(caught.value))
        replayed = list(cas.stream(stream_req, live=lambda: iter(())))
    assert len(replayed) == len(chunks)
    joined = "".join(c["choices"][0]["delta"]["content"] for c in replayed)
    assert joined == R.redact_text(text)[0] and not leaks(joined)


def test_request_headers_are_scrubbed_unless_harmless(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    headers = {"Content-Type": "application/json", "X-Stainless-Lang": "python",
               "X-Tenant": "tenant-42", "X-Custom-Token": "opaque-1"}  # fmt: skip
    request = {"model": "m", "messages": [], "headers": headers}
    with cassette.open(path, "record") as cas:
        cas.call(request, live=lambda: {"ok": 1})
    written = json.loads(path.read_text().splitlines()[1])
    assert written["request"]["headers"] == {
        "Content-Type": "application/json", "X-Stainless-Lang": "python",
        "X-Tenant": REDACTED, "X-Custom-Token": REDACTED,
    }  # fmt: skip
    assert written["meta"]["redacted"] == 2
    with cassette.open(path, "replay") as cas:  # headers are never hashed
        other = {**request, "headers": {"X-Tenant": "another"}}
        assert cas.call(other, live=lambda: {}) == {"ok": 1}


@pytest.mark.parametrize("mode", ["record", "append"])
def test_a_secret_looking_env_index_or_channel_is_refused_before_the_live_call(
    tmp_path: Path, mode: str
) -> None:
    secret = KINDS["openai"][0].text
    called: list[int] = []

    def live() -> Json:
        called.append(1)
        return {"ok": 1}

    with cassette.open(tmp_path / "a.jsonl", mode) as cas:
        with pytest.raises(CassetteError, match=r"looks like a secret.*use another env_index"):
            cas.call({"q": 1}, live=live, env_index=secret)
        with pytest.raises(CassetteError, match="use another channel"):
            cas.call({"q": 1}, live=live, channel=f"x {secret}")
        with pytest.raises(CassetteError, match="env_index"):
            cas.outcome(secret, reward=1.0)
        assert called == []
        cas.call({"q": 1}, live=live, env_index="task-7")  # an ordinary id is fine
    raw = (tmp_path / "a.jsonl").read_bytes()
    assert secret.encode() not in raw
    with cassette.open(tmp_path / "a.jsonl", "replay") as cas:
        assert cas.call({"q": 1}, live=live, env_index="task-7") == {"ok": 1}


# --- through wrap_openai --------------------------------------------------------------------


def refuse(self: socket.socket, *args: Any) -> None:
    raise AssertionError(f"replay tried to connect to {args}")


def test_wrap_openai_streams_leak_no_kind(tmp_path: Path, make_server: Any) -> None:
    openai = pytest.importorskip("openai")
    from cassette.adapters.openai import wrap_openai

    server = make_server("script", chunk_words=1)
    samples = [KINDS[kind][0] for kind in sorted(KINDS)]
    block = " ".join(s.text for s in samples)
    args = json.dumps({"password": KINDS["json_argument"][1].secrets[0], "notes": block})
    tool = {"name": "save", "arguments": args}
    # each reply twice: once for chat, once for the Responses API
    server.enqueue({"content": block}, {"tool_calls": [tool]}, {"content": block},
                   {"tool_calls": [tool]})  # fmt: skip
    tools_chat = [{"type": "function", "function": {"name": "save", "parameters": {}}}]
    tools_resp = [{"type": "function", "name": "save", "parameters": {}}]
    messages = [{"role": "user", "content": "go"}]
    path = tmp_path / "a.jsonl"

    def run(client: Any) -> list[list[Any]]:
        chats = [
            list(client.chat.completions.create(model="m", messages=messages, stream=True)),
            list(client.chat.completions.create(model="m", messages=messages, stream=True,
                                                tools=tools_chat)),
        ]  # fmt: skip
        resps = [
            list(client.responses.create(model="m", input="go", stream=True)),
            list(client.responses.create(model="m", input="go", stream=True, tools=tools_resp)),
        ]
        return chats + resps

    key = "sk-proj-FAKE" + "0" * 30
    with (
        cassette.open(path, "record") as cas,
        openai.OpenAI(base_url=server.base_url, api_key=key) as client,
    ):
        live = run(wrap_openai(client, cas))
    raw = path.read_bytes()
    assert leaks(raw, samples) == [] and key.encode() not in raw
    texts = "".join(c.choices[0].delta.content or "" for c in live[0] if c.choices)
    assert texts == block  # the caller got the live stream

    offline = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x")
    with cassette.open(path, "replay") as cas, offline, pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)  # replay is offline
        replayed = run(wrap_openai(offline, cas))
    assert [len(r) for r in replayed] == [len(r) for r in live]
    assert [[type(c) for c in r] for r in replayed] == [[type(c) for c in r] for r in live]
    assert not leaks(" ".join(c.model_dump_json() for r in replayed for c in r), samples)
    args_back = "".join(
        c.delta for c in replayed[3] if c.type == "response.function_call_arguments.delta"
    )
    assert json.loads(args_back)["password"] == REDACTED


def test_cassette_redact_scrubs_split_secrets_in_an_old_file_once(tmp_path: Path) -> None:
    from cassette.dataset.convert import redact
    from cassette.storage.recorder import header_line

    path = tmp_path / "old.jsonl"
    secret = KINDS["stripe_live"][0].text
    pieces = ["key: " + secret[:5], secret[5:11], secret[11:] + " ok"]
    line = {"type": "interaction", "env_index": 0, "channel": "llm", "step": 0,
            "request": {"q": 1}, "request_sha256": NON_SECRETS[0],
            "response": {"chunks": [_chat("content")(p) for p in pieces]}, "meta": {}}  # fmt: skip
    path.write_bytes(dumps(header_line()) + b"\n" + dumps(line) + b"\n")
    assert sum(redact(path).values()) == 1
    raw = path.read_bytes()
    assert secret[:5].encode() not in raw and secret[5:11].encode() not in raw
    assert NON_SECRETS[0].encode() in raw  # the hash is kept
    assert sum(redact(path).values()) == 0 and path.read_bytes() == raw  # once


def _logprobs(tokens: list[str]) -> list[Json]:
    return [
        {"token": t, "logprob": -0.5, "bytes": list(t.encode()),
         "top_logprobs": [{"token": t, "logprob": -0.5, "bytes": list(t.encode())}]}
        for t in tokens
    ]  # fmt: skip


def _spelled(data: Any) -> str:
    """The chosen tokens of every logprobs list, joined in order, then their bytes joined
    and the first alternatives joined (what a reader could rebuild)."""
    tokens: list[str] = []
    spelled: list[bytes] = []
    tops: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, v in node.items():
                if key == "content" and isinstance(v, list) and v and "token" in v[0]:
                    tokens.extend(item["token"] for item in v)
                    spelled.extend(bytes(item["bytes"]) for item in v)
                    tops.extend(item["top_logprobs"][0]["token"] for item in v)
                else:
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(data)
    return "".join(tokens) + " | " + b"".join(spelled).decode() + " | " + "".join(tops)


def test_logprobs_that_spell_a_secret_token_by_token_are_scrubbed() -> None:
    for sample in [KINDS[k][0] for k in ("openai", "bearer", "json_argument", "pem")]:
        text = f"key {sample.text} end"
        tokens = [text[i : i + 3] for i in range(0, len(text), 3)]
        # streamed: two tokens a chunk, each with its logprob, bytes and top alternative
        chunks = []
        for i in range(0, len(tokens), 2):
            chunk = _chat("content")("".join(tokens[i : i + 2]))
            chunk["choices"][0]["logprobs"] = {"content": _logprobs(tokens[i : i + 2])}
            chunks.append(chunk)
        line: Json = {"response": {"chunks": chunks}}
        out, _ = R.redact_line(line, dumps(line), dumps)
        assert not leaks(dumps(out), [sample]) and not leaks(_spelled(out), [sample])
        # not streamed: the message holds the whole text, the logprobs its tokens
        choice = {"message": {"content": text}, "logprobs": {"content": _logprobs(tokens)}}
        line = {"response": {"choices": [choice]}}
        out, _ = R.redact_line(line, dumps(line), dumps)
        assert not leaks(dumps(out), [sample]) and not leaks(_spelled(out), [sample])


@pytest.mark.parametrize("how", ["closed early", "failed"])
def test_a_stream_cut_short_inside_a_secret_leaves_no_part_of_it(how: str) -> None:
    for kind, samples in sorted(KINDS.items()):
        sample = samples[0]
        text = f"Your value is {sample.text}. Thanks"
        for cut in range(1, len(text)):
            pieces = [text[:cut][i : i + 5] for i in range(0, cut, 5)]
            line: Json = {"response": {"chunks": [_chat("content")(p) for p in pieces]}}
            if how == "failed":
                line["error"] = {"type": "RuntimeError", "message": "connection reset"}
            else:
                line["meta"] = {"incomplete": True}
            out, _ = R.redact_line(line, dumps(line), dumps)
            written = "".join(_text_of(c) for c in out["response"]["chunks"])  # as read back
            assert len(out["response"]["chunks"]) == len(pieces)
            for secret in sample.secrets:
                start = text.find(secret)
                shown = text[start : min(cut, start + len(secret))]  # the part it got to
                if any(head.startswith(shown) for head in ("github_pat_",)):
                    continue  # cut before the secret's mark is whole: nothing tells it yet
                grams = {shown[i : i + 6] for i in range(len(shown) - 5)}
                assert not any(g in written for g in grams), (kind, cut, shown)
