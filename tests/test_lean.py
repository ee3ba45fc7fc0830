"""Lean open: replay keeps each interaction line's bytes and decodes a response when it
serves it; what it serves equals what an eager load holds, damage is still refused."""

from __future__ import annotations

from pathlib import Path

import pytest

import cassette
from cassette.index import load_index
from cassette.lean import LeanEntry
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
        assert isinstance(entry, LeanEntry) and "response" not in vars(entry)
        other = eager.entries[key]
        assert entry.sha == other.sha and entry.delta == other.delta
        assert entry.full_request() == other.full_request()
        assert entry.served() == (other.response, other.error) and entry.meta == other.meta
    with cassette.open(path, "replay") as cas:
        for env in range(3):
            for step in range(4):
                got = cas.call(request_for(env, step), live=lambda: {}, env_index=env)
                assert got == response_for(env, step)
        assert all(isinstance(e, LeanEntry) for e in cas.index.entries.values())


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
