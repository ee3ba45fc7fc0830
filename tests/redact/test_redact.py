"""Secrets never reach disk, and rotating a key changes nothing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.format.codec import dumps
from cassette.redact import DEFAULT_KEYS, REDACTED, Redactor

PLANTED = {
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "anthropic": "sk-ant-api03-ZZZZZZZZZZZZZZZZZZZZZZZZ",
    "bearer": "Bearer eyJhbGciOiJIUzI1NiJ9abcdefghijkl",
    "github": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
    "aws": "AKIAABCDEFGHIJKLMNOP",
    "google": "AIzaSyA-0123456789abcdefghijklmnopqrstu",
    "hf": "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
}


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz"])
def test_planted_secrets_are_not_in_the_raw_bytes(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    request = {
        "model": "m",
        "api_key": "plain-value-without-pattern-1",
        "extra_headers": {"Authorization": "token-without-pattern-2", "X-Api-Key": "value-3"},
        "messages": [{"role": "user", "content": f"my keys: {' and '.join(PLANTED.values())}"}],
    }
    with cassette.open(path, "record", meta={"client_secret": "value-4"}) as cas:
        cas.call(request, live=lambda: {"echo": PLANTED["openai"], "password": "value-5"})
        with pytest.raises(RuntimeError):
            cas.call({"q": 2}, live=lambda: (_ for _ in ()).throw(RuntimeError(PLANTED["bearer"])))
        cas.outcome(0, reward=1.0, info={"token_used": PLANTED["github"]})
    raw = path.read_bytes()
    if name.endswith(".gz"):
        raw = gzip.decompress(raw)
    for secret in (*PLANTED.values(), "plain-value-without-pattern-1", "token-without-pattern-2"):
        assert secret.encode() not in raw
    for value in ("value-3", "value-4", "value-5"):
        assert value.encode() not in raw
    assert REDACTED.encode() in raw
    # the recording still replays: the hash is of the request as made
    with cassette.open(path, "replay") as cas:
        assert cas.call(request, live=lambda: {})["echo"] == REDACTED


def test_rotating_the_api_key_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    req = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with cassette.open(path, "record") as cas:
        cas.call({**req, "api_key": "sk-old0000000000000000000"}, live=lambda: {"r": 1})
    with cassette.open(path, "replay") as cas:
        assert cas.call({**req, "api_key": "sk-new1111111111111111111"}, live=lambda: {}) == {
            "r": 1
        }


def test_configurable_keys_and_patterns() -> None:
    r = Redactor(extra_keys=["session"], extra_patterns=[r"tok_[a-z]{6}"], replacement="***")
    out, n = r.redact({"session": "s1", "text": "use tok_abcdef now", "keep": "plain"})
    assert out == {"session": "***", "text": "use *** now", "keep": "plain"}
    assert n == 2
    line = {"type": "interaction", "request": {"text": "tok_abcdef"}}  # (no gate sees it)
    assert r.redact_line(line, dumps(line), dumps) == (
        {"type": "interaction", "request": {"text": "***"}},
        1,
    )
    none = Redactor(keys=(), patterns=())
    assert none.redact({"api_key": "x"}) == ({"api_key": "x"}, 0)
    # untouched parts are shared, not copied
    inner = {"a": "b"}
    out, n = Redactor().redact({"inner": inner, "api_key": "x"})
    assert n == 1 and out["inner"] is inner


def test_user_patterns_run_on_every_string_of_every_line() -> None:
    r = Redactor(extra_patterns=[r"a?bq", r"zz|yy", r"(?:tok|key)_\d+", r"x{2}w", r"^\d{4}$"])
    for text in ("bq", "abq", "yy", "key_12", "xxw", "1234", "Bearer abcdefghijklmnop"):
        line = {"step": 0, "response": {"t": [text]}}
        out, count = r.redact_line(line, dumps(line), dumps)
        assert count == 1 and out == {"step": 0, "response": {"t": [REDACTED]}}, text
    assert not Redactor().hits(b'{"t":"nothing to see"}')  # the defaults' line gates


def test_the_hook_sees_every_line_scrubbed_and_keeps_its_identity(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def hook(line: dict[str, Any]) -> dict[str, Any] | None:
        seen.append(line)
        if line["type"] != "interaction":
            return None  # kept as it is
        return {**line, "env_index": 99, "response": {"text": line["response"]["text"].upper()}}

    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record", redact=Redactor(hook=hook)) as cas:
        assert cas.call({"q": 1}, live=lambda: {"text": "hi sk-" + "a" * 20}) == {
            "text": "hi sk-" + "a" * 20
        }
        cas.outcome(0, reward=1.0)
    assert [line["type"] for line in seen] == ["header", "interaction", "outcome"]
    assert seen[1]["response"] == {"text": f"hi {REDACTED}"}  # after the patterns
    written = [json.loads(x) for x in path.read_text().splitlines()]
    assert written[1]["response"] == {"text": f"HI {REDACTED.upper()}"}
    assert written[1]["env_index"] == 0 and written[1]["meta"]["redacted"] == 2
    with cassette.open(path, "replay") as cas:  # the checksum is of what was written
        assert cas.call({"q": 1}, live=lambda: {}) == {"text": f"HI {REDACTED.upper()}"}


def test_the_hook_sees_the_header_of_a_new_file_in_append_mode(tmp_path: Path) -> None:
    def hook(line: dict[str, Any]) -> dict[str, Any] | None:
        return {**line, "meta": {"hooked": True}} if line["type"] == "header" else None

    path = tmp_path / "a.jsonl"
    with cassette.open(path, "append", meta={"x": 1}, redact=Redactor(hook=hook)) as cas:
        cas.call({"q": 1}, live=lambda: {"ok": 1})
    header = json.loads(path.read_text().splitlines()[0])
    assert header["type"] == "header" and header["meta"] == {"hooked": True}


def test_the_key_scan_finds_every_spelling_of_a_secret_key_and_nothing_longer() -> None:
    r = Redactor(patterns=())
    for key in DEFAULT_KEYS:
        for spelled in (key, key.replace("_", "-"), key.upper(), key.title()):
            assert r.hits(f'{{"{spelled}":"v"}}'.encode()), spelled
            assert r.redact({spelled: "v"})[1] == 1, spelled
    for near in ("api_keys", "keyboard", "pass", "xapi_key", "token", "cookies", "max_tokens"):
        assert r.redact({near: "v"}) == ({near: "v"}, 0), near  # the gate may pass them
    for near in ("keyboard", "pass", "cookies", "max_tokens", "content", "function"):
        assert not r.hits(f'{{"{near}":"v"}}'.encode()), near
    nested = Redactor(keys=["a", "ab"], patterns=())  # one key a prefix of another
    assert nested.hits(b'{"a":1}') and nested.hits(b'{"ab":1}')
    assert not nested.hits(b'{"b":1}')


ONE_OF_EACH = [  # an example of every default pattern, each planted alone below
    *PLANTED.values(),
    "github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz_0123456789ABCDEFGH",
    "xoxb-123456789012-abcdefABCDEF",
    "fw_abcdefghijklmnopqrstuvwx",
    "gsk_abcdefghijklmnopqrstuvwx",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJl",
]


@pytest.mark.parametrize("secret", ONE_OF_EACH)
def test_the_fast_scan_finds_each_default_secret_alone(secret: str) -> None:
    r = Redactor()
    for text in (secret, f"key: {secret}.", f"a_b-c {secret}"):
        line = {"type": "interaction", "request": {"tool_call_id": "x_y-z", "content": text}}
        raw = cassette.format.codec.dumps(line)
        assert r.hits(raw), text
        out, count = r.redact(line)
        assert count == 1 and secret not in str(out), text
