"""Valid cassettes to mutate, the mutations, and the readers a fuzzed file is put through
(tests/storage/test_fuzz_reader.py)."""

from __future__ import annotations

import contextlib
import gzip
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import orjson
from hypothesis import strategies as st

import cassette
from cassette.adapters.openai._errors import OpenAIErrors
from cassette.cli.show import episode_transcripts
from cassette.cli.stats import compute_stats
from cassette.dataset.inspect import (
    response_calls,
    response_message,
    tool_calls,
    usage_of,
    usage_totals,
)
from cassette.dataset.validate import validate
from cassette.diff import diff_runs
from cassette.errors import CassetteError
from cassette.storage.index import load_index

Json = dict[str, Any]

STATUS_ERROR = {
    "type": "openai.RateLimitError",
    "message": "Error code: 429 - slow down",
    "data": {
        "kind": "status",
        "status_code": 429,
        "headers": {"retry-after": "1", "x-request-id": "req_1"},
        "body": {"error": {"message": "slow down", "type": "rate_limit", "code": "429"}},
    },
}


class _Codec:
    """Records every exception as a recorded openai status error."""

    def dump(self, exc: BaseException) -> Json | None:
        return STATUS_ERROR

    def load(self, info: Json) -> BaseException | None:
        return None


def _chunk(content: str | None = None, call: Json | None = None, usage: Json | None = None) -> Json:
    delta: Json = {}
    if content is not None:
        delta["content"] = content
    if call is not None:
        delta["tool_calls"] = [call]
    out: Json = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    if usage is not None:
        out["usage"] = usage
    return out


def _answer(text: str, calls: bool = False) -> Json:
    msg: Json = {"role": "assistant", "content": text}
    if calls:
        msg["tool_calls"] = [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": '{"q":1}'}}
        ]
    return {
        "id": "x",
        "model": "m",
        "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
    }


def _fail() -> Json:
    raise RuntimeError("live failed")


def make_base(path: Path) -> Path:
    """A small cassette that uses every feature a reader meets: delta lines with
    references, changed parameters, streams with tool-call chunks, recorded errors,
    a second channel, string and int episodes, outcomes."""
    with cassette.open(path, "record") as cas:
        for env in (0, "task/1"):
            messages: list[Json] = [{"role": "system", "content": "be brief"}]
            for step in range(3):
                messages.append({"role": "user", "content": f"q{step} of {env}"})
                request = {"model": "m", "messages": list(messages), "temperature": 0.5}
                if step == 2:
                    request["tools"] = [{"type": "function", "function": {"name": "look"}}]
                response = _answer(f"a{step}", calls=step == 1)
                cas.call(request, live=lambda r=response: r, env_index=env)
                messages.append(response["choices"][0]["message"])
            chunks = [
                _chunk("he"),
                _chunk("llo"),
                _chunk(call={"index": 0, "id": "c2", "function": {"name": "f", "arguments": "{}"}}),
                _chunk(usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
            ]
            request = {"model": "m", "messages": [*messages, {"role": "user", "content": "s"}]}
            list(cas.stream(request, live=lambda c=chunks: iter(c), env_index=env))
            with contextlib.suppress(RuntimeError):
                cas.call({"model": "m", "messages": []}, live=_fail, env_index=env, errors=_Codec())
            cas.call(
                {"tool": "look", "args": {"q": 1}},
                live=lambda: {"ok": 1},
                env_index=env,
                channel="mcp",
            )
            cas.outcome(env, reward=1.0, terminated=True, info={"n": 1})
    return path


# --- mutations ---------------------------------------------------------------------------

ODD_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**63,
    2**64 - 1,
    1.5,
    -0.0,
    1e308,
    "",
    "x",
    [],
    [[1]],
    [None],
    {},
    {"a": 1},
    {"kind": "status"},
    [{"index": "x"}],
    [{"choices": [{"delta": {"tool_calls": [{"index": [1]}]}}]}],
    [{"choices": [{"delta": {"tool_calls": 5}}]}],
    "*",
]


FIELDS = [
    "model",
    "usage",
    "cost",
    "cost_usd",
    "chunks",
    "tool_calls",
    "checksum",
    "status_code",
    "headers",
    "data",
    "kind",
    "body",
    "message",
    "choices",
    "delta",
    "output",
    "omit",
    "$ref",
    "$lit",
    "same",
    "keep",
    "base",
    "field",
    "latency_ms",
    "redacted",
    "incomplete",
    "prompt_tokens",
    "input_tokens",
    "total_tokens",
    "_hidden_params",
    "function",
    "index",
    "arguments",
    "name",
    "content",
    "role",
    "reward",
    "info",
    "messages",
    "input",
]


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replace(value.get(head), rest, new)}
    out = list(value)
    out[head] = _replace(out[head], rest, new)
    return out


@st.composite
def mutated(draw: st.DrawFn, base: bytes) -> tuple[bytes, bool]:
    """(file bytes, gzip?) of a mutation of ``base`` (the bytes of a valid cassette)."""
    data = base
    lines = data.split(b"\n")[:-1]
    kind = draw(
        st.sampled_from(["flip", "truncate", "swap", "deep", "chunks", "lines", "blank", "none"])
    )
    if kind == "flip":
        for _ in range(draw(st.integers(1, 3))):
            pos = draw(st.integers(0, len(data) - 1))
            bit = 1 << draw(st.integers(0, 7))
            data = data[:pos] + bytes([data[pos] ^ bit]) + data[pos + 1 :]
    elif kind == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif kind in ("swap", "deep", "chunks"):
        i = draw(st.integers(0, len(lines) - 1))
        obj = orjson.loads(lines[i])
        paths = list(_paths(obj))
        if kind == "chunks":
            paths = [p for p in paths if "chunks" in p] or paths
        path = draw(st.sampled_from(paths))
        if draw(st.booleans()):  # a field added where a reader may look for it
            holders = [p for p in paths if isinstance(_get(obj, p), dict)]
            path = (*draw(st.sampled_from(holders)), draw(st.sampled_from(FIELDS)))
        if kind == "deep":  # spliced in as text: orjson writes at most 255 levels
            depth = draw(st.sampled_from([250, 253, 254, 255, 256, 300, 1000]))
            raw = orjson.dumps(_replace(obj, path, "@DEEP@"))
            lines[i] = raw.replace(b'"@DEEP@"', b"[" * depth + b"1" + b"]" * depth, 1)
        else:
            lines[i] = orjson.dumps(_replace(obj, path, draw(st.sampled_from(ODD_VALUES))))
        data = b"\n".join(lines) + b"\n"
    elif kind == "lines":
        i = draw(st.integers(0, len(lines) - 1))
        j = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["dup", "drop", "move"]))
        if op == "dup":
            lines.insert(j, lines[i])
        elif op == "drop":
            del lines[i]
        else:
            lines.insert(j, lines.pop(i))
        data = b"\n".join(lines) + b"\n"
    elif kind == "blank":
        data = data + b"\n" * draw(st.integers(1, 5000)) + b" \t\n"
    gz = draw(st.booleans())
    if gz:
        data = gzip.compress(data, mtime=0)
        if draw(st.booleans()):
            data = data[: draw(st.integers(0, len(data)))]
    return data, gz


# --- the readers -------------------------------------------------------------------------

_CLIENT = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)
ERRORS = OpenAIErrors(_CLIENT, "/chat/completions")


def attempt(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Run ``fn(*args, **kwargs)``; a CassetteError is an answer, any other exception
    escapes."""
    with contextlib.suppress(CassetteError):
        fn(*args, **kwargs)


def _no_live() -> Json:
    raise AssertionError("replay called live")


def read_everything(path: Path) -> None:
    """Put ``path`` through every reader of the library; only CassetteError may escape."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attempt(lambda: validate(path))
        try:
            index = load_index([path])
        except CassetteError:
            return
        attempt(lambda: list(index.iter_full()))
        attempt(lambda: compute_stats(index))
        attempt(lambda: episode_transcripts(index))
        attempt(lambda: episode_transcripts(index, full=True))
        attempt(lambda: diff_runs(index, index))
        for entry in list(index.entries.values()):
            attempt(entry.check)
            attempt(entry.full_request)
            for fn in (response_message, tool_calls, response_calls):
                attempt(fn, entry.response)
            attempt(usage_of, entry)
            attempt(usage_totals, entry)
            if isinstance(entry.error, dict):
                attempt(ERRORS.load, entry.error)
        for match in ("strict", "key"):
            try:
                cas = cassette.open(path, "replay", match=match)
            except CassetteError:
                return
            with cas:
                for entry in list(index.entries.values()):
                    attempt(_replay_one, cas, entry)


def _replay_one(cas: cassette.Cassette, entry: Any) -> None:
    request = entry.full_request() if entry.sha else entry.request
    key = {"env_index": entry.env_index, "channel": entry.channel, "step": entry.step}
    with contextlib.suppress(openai.APIError):
        cas.call(request, live=_no_live, errors=ERRORS, **key)
    with contextlib.suppress(openai.APIError):
        list(cas.stream(request, live=_no_live, errors=ERRORS, **key))
