"""Lean open: replay keeps each interaction line's bytes and decodes a response when it
serves it; what it serves equals what an eager load holds, damage is still refused.

A line as the recorder writes it is checked by a CRC of its response's bytes in place
(the fast check); any other line (an error, another layout) the slow way; a changed
byte is refused by either."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

import cassette
from cassette.dataset.validate import validate
from cassette.format.checksum import checksum
from cassette.format.entry import Entry
from cassette.storage.index import load_index
from tests.helpers.worker import request_for, response_for


def _record(path: Path) -> None:
    with cassette.open(path, "record") as cas:
        for env in range(3):
            for step in range(4):
                cas.call(
                    request_for(env, step),
                    live=lambda e=env, s=step: response_for(e, s),
                    env_index=env,
                )


def test_lean_entries_hold_bytes_and_equal_an_eager_load(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    eager, lean = load_index([path]), load_index([path], lean=True)
    assert eager.entries.keys() == lean.entries.keys()
    for key, entry in lean.entries.items():
        assert entry.kept is None and entry.raw.endswith(b"\n")  # bytes, decoded when asked
        other = eager.entries[key]
        assert entry.sha == other.sha and entry.delta == other.delta
        assert entry.full_request() == other.full_request()
        assert entry.served() == (other.response, other.error) and entry.meta == other.meta
    with cassette.open(path, "replay") as cas:
        for env in range(3):
            for step in range(4):
                got = cas.call(request_for(env, step), live=lambda: {}, env_index=env)
                assert got == response_for(env, step)
        assert all(e.kept is None for e in cas.index.entries.values())


def test_a_damaged_response_is_refused_when_served(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    text = path.read_text().replace("answer 2 of episode 1", "answer 2 of episode 9")
    path.write_text(text)
    with cassette.open(path, "replay") as cas:
        cas.call(request_for(0, 0), live=lambda: {}, env_index=0)  # others serve
        for step in range(2):
            cas.call(request_for(1, step), live=lambda: {}, env_index=1)
        with pytest.raises(cassette.CassetteFormatError, match=r"meta\.checksum does not match"):
            cas.call(request_for(1, 2), live=lambda: {}, env_index=1)


# --- the fast check: a CRC of the response's bytes in place -----------------------------


def _entries(path: Path) -> list[Entry]:
    entries = list(load_index([path], lean=True).entries.values())
    assert all(e.kept is None for e in entries)
    return entries


def test_lines_as_the_recorder_writes_them_take_the_fast_check(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    eager = load_index([path])
    for entry in _entries(path):
        entry.check()
        assert entry.checked and entry.stop > 0  # checked at load
        assert entry.served() == (eager.entries[entry.key].response, None)


def _rewrite(path: Path, line_no: int, edit: Callable[[bytes], bytes]) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    new = edit(lines[line_no])
    assert new != lines[line_no]
    lines[line_no] = new
    path.write_bytes(b"".join(lines))


def _respace(line: bytes) -> bytes:
    """The response and meta written with spaces (json.dumps' default separators)."""
    obj = orjson.loads(line)
    head, _, _ = line.partition(b'"response":')
    rest = {k: obj[k] for k in ("response", "error", "meta") if k in obj}
    return head + json.dumps(rest)[1:].encode() + b"\n"


def _meta_first(line: bytes) -> bytes:
    """meta before response, its checksum first: another key order of the same line."""
    obj = orjson.loads(line)
    head, _, _ = line.partition(b'"response":')
    meta = {"checksum": obj["meta"]["checksum"], **obj["meta"]}
    return head + orjson.dumps({"meta": meta, "response": obj["response"]})[1:] + b"\n"


@pytest.mark.parametrize("edit", [_respace, _meta_first])
def test_a_line_laid_out_otherwise_is_checked_the_slow_way_and_serves(
    tmp_path: Path, edit: Callable[[bytes], bytes]
) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    _rewrite(path, 3, edit)  # line 4: episode 0, step 2 (a delta line)
    entry = next(e for e in _entries(path) if e.line == 4)
    entry.check()
    assert entry.stop == 0
    with cassette.open(path, "replay") as cas:
        for step in range(4):
            got = cas.call(request_for(0, step), live=lambda: {}, env_index=0)
            assert got == response_for(0, step)


def _flip(line: bytes) -> bytes:
    """One byte of the response's text changed (same length: the layout stays)."""
    at = line.index(b"answer 2 of episode 1") + len(b"answer ")
    return line[:at] + b"3" + line[at + 1 :]


def _flip_spaced(line: bytes) -> bytes:
    return _flip(_respace(line))


@pytest.mark.parametrize("edit", [_flip, _flip_spaced])
def test_a_flipped_byte_in_the_response_is_refused_by_either_check(
    tmp_path: Path, edit: Callable[[bytes], bytes]
) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    number = next(
        i for i, x in enumerate(path.read_bytes().splitlines()) if b"answer 2 of episode 1" in x
    )
    _rewrite(path, number, edit)
    entry = next(e for e in _entries(path) if e.line == number + 1)
    # _flip keeps the layout of the fast check: it fails there (at load), and when served
    assert not entry.checked and entry.stop == 0
    with pytest.raises(cassette.CassetteFormatError, match=r"meta\.checksum does not match"):
        entry.check()
    with cassette.open(path, "replay") as cas:
        cas.call(request_for(1, 0), live=lambda: {}, env_index=1)
        cas.call(request_for(1, 1), live=lambda: {}, env_index=1)
        with pytest.raises(cassette.CassetteFormatError, match=r"a\.jsonl:\d+: the response"):
            cas.call(request_for(1, 2), live=lambda: {}, env_index=1)


def test_errors_redactions_and_nested_meta_keys_check_and_serve(tmp_path: Path) -> None:
    """A line with an error falls back to the slow check; a redacted line (its meta
    rewritten) and a response holding "meta" and "error" keys take the fast one."""
    path = tmp_path / "a.jsonl"
    secret = "sk-proj-" + "A1b2C3d4E5" * 4
    odd = {"choices": [], "meta": {"x": 1}, "error": {"y": [1, 2]}}

    def fail() -> dict[str, Any]:
        raise ValueError("boom")

    with cassette.open(path, "record") as cas:
        cas.call({"q": 0}, live=lambda: {"text": f"key {secret}"}, env_index=0)
        with pytest.raises(ValueError, match="boom"):
            cas.call({"q": 1}, live=fail, env_index=0)
        cas.call({"q": 2}, live=lambda: odd, env_index=0)
    assert validate(path).ok
    entries = {e.step: e for e in _entries(path)}
    for entry in entries.values():
        entry.check()
    assert entries[0].stop > 0 and entries[0].meta["redacted"] == 1
    assert entries[1].stop == 0 and entries[2].stop > 0
    with cassette.open(path, "replay") as cas:
        assert cas.call({"q": 0}, live=dict, env_index=0) == {"text": "key [REDACTED]"}
        with pytest.raises(cassette.RecordedError, match="boom"):
            cas.call({"q": 1}, live=dict, env_index=0)
        assert cas.call({"q": 2}, live=dict, env_index=0) == odd


def test_the_recorded_checksum_is_that_of_the_response_and_error(tmp_path: Path) -> None:
    """The recorder CRCs the bytes it wrote: equal to checksum() of the decoded line."""
    path = tmp_path / "a.jsonl"

    def fail() -> dict[str, Any]:
        raise KeyError("gone")

    with cassette.open(path, "record") as cas:
        cas.call({"q": 0}, live=lambda: {"a": [1.5, "é", None, {"b": True}]}, env_index=0)
        with pytest.raises(KeyError):
            cas.call({"q": 1}, live=fail, env_index=0)
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()[1:]]
    assert len(lines) == 2 and "error" in lines[1]
    for line in lines:
        assert line["meta"]["checksum"] == checksum(line["response"], line.get("error"))
        assert list(line)[-1] == "meta" and list(line["meta"])[-1] == "checksum"


@pytest.mark.parametrize(
    "env",
    [-3, 0, 10**15, "ép", 'a"b\\c', "tab\there", 2**62],
    ids=["negative", "zero", "big", "unicode", "escapes", "control", "huge"],
)
def test_any_head_reads_as_the_eager_reader_reads_it(tmp_path: Path, env: int | str) -> None:
    """Heads as the recorder writes them are read by one regex, others parsed whole:
    either way a lean entry holds what the eager reader holds."""
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas:
        for step in range(3):
            cas.call(
                {
                    "model": "m",
                    "messages": [{"role": "user", "content": f"x{k}"} for k in range(step + 1)],
                },
                live=lambda s=step: {"choices": [{"message": {"role": "assistant", "content": s}}]},
                env_index=env,
                channel="tool:é",
                step=step * 7,
            )
    eager, lean = load_index([path]), load_index([path], lean=True)
    assert list(eager.entries) == list(lean.entries) == [(env, "tool:é", s * 7) for s in range(3)]
    for key, entry in lean.entries.items():
        other = eager.entries[key]
        assert entry.kept is None and entry.checked
        assert (entry.sha, entry.delta, entry.line) == (other.sha, other.delta, other.line)
        assert entry.full_request() == other.full_request()
        assert entry.served() == (other.response, other.error)
