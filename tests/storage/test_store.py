"""cassette.storage.store: the append-only writer, the streaming reader, .gz files, shard
directories, and how cassette.open uses them (format checks, record mode's side file)."""

from __future__ import annotations

import gzip
import os
import warnings
import zlib
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest

import cassette
from cassette.storage import store
from cassette.storage.index import load_index
from tests.helpers.records import answer, no_live, read_all, record_calls, replay_calls

HEADER = {
    "type": "header",
    "format": "rollout-cassette",
    "version": 1,
    "created_at": "2024-01-01T00:00:00.000Z",
    "producer": "rollout-cassette/0.1.0",
    "meta": {},
}


def line(obj: dict[str, Any]) -> bytes:
    return orjson.dumps(obj) + b"\n"


def outcome(env: int) -> dict[str, Any]:
    return {"type": "outcome", "env_index": env, "reward": float(env), "terminated": True}


# --- Writer ----------------------------------------------------------------------------


def test_writer_appends_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "dir" / "w.jsonl"  # the writer creates missing parents
    w = store.Writer(path)
    assert not w.closed
    w.write(b'{"n":1}')
    w.write(b'{"n":2}')
    # each write reaches the file at once, newline included (no buffering in the writer)
    assert path.read_bytes() == b'{"n":1}\n{"n":2}\n'
    w.close()
    assert w.closed
    w.close()  # idempotent
    with pytest.raises(cassette.CassetteError, match="closed"):
        w.write(b'{"n":3}')

    again = store.Writer(path)  # a second writer appends, never truncates
    again.write(b'{"n":3}')
    again.close()
    assert path.read_bytes() == b'{"n":1}\n{"n":2}\n{"n":3}\n'
    assert read_all(path) == [(1, {"n": 1}), (2, {"n": 2}), (3, {"n": 3})]


def test_writer_writes_plain_lines_whatever_the_name(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl.gz"  # a .gz cassette is compressed whole, when published
    w = store.Writer(path)
    w.write(b'{"n":1}')
    w.close()
    assert path.read_bytes() == b'{"n":1}\n'


# --- iter_records ----------------------------------------------------------------------


def test_iter_records_yields_line_numbers_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(line(HEADER) + b"\n   \n" + line(outcome(0)) + b"\r\n" + line(outcome(1)))
    got = read_all(path)
    # line numbers count the blank lines, so they point at the real line of the file
    assert got == [(1, HEADER), (4, outcome(0)), (6, outcome(1))]


def test_truncated_last_line_warns_and_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    cut = line(outcome(2))[:15]
    path.write_bytes(line(HEADER) + line(outcome(1)) + cut)
    with pytest.warns(cassette.CassetteWarning, match=r"c\.jsonl:3: last line is cut short"):
        got = list(store.iter_records(path))
    assert got == [(1, HEADER), (2, outcome(1))]


def test_bad_line_in_the_middle_is_a_format_error_with_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(line(HEADER) + b'{"type": "outcome", "env_' + b"\n" + line(outcome(1)))
    with pytest.raises(cassette.CassetteFormatError) as info:
        list(store.iter_records(path))
    assert f"{path}:2" in str(info.value)
    assert "cassette validate" in str(info.value)
    assert info.value.line == 2
    assert info.value.path == str(path)


def test_invalid_last_line_with_its_newline_is_an_error_not_a_crash(tmp_path: Path) -> None:
    # a whole (terminated) line that is not JSON was not cut by a crash: it is an error
    path = tmp_path / "c.jsonl"
    path.write_bytes(line(HEADER) + b"{not json}\n")
    with pytest.raises(cassette.CassetteFormatError, match=r"c\.jsonl:2"):
        list(store.iter_records(path))


@pytest.mark.parametrize("bad", [b"[1, 2]", b'"text"', b"42", b"null"])
def test_a_line_that_is_not_an_object_is_an_error(tmp_path: Path, bad: bytes) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(line(HEADER) + bad + b"\n" + line(outcome(0)))
    with pytest.raises(cassette.CassetteFormatError, match=r"c\.jsonl:2: expected a JSON object"):
        list(store.iter_records(path))


# --- repair_tail -----------------------------------------------------------------------


def test_repair_tail_cuts_a_truncated_last_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = line(HEADER) + line(outcome(1))
    path.write_bytes(good + line(outcome(2))[:20])
    assert store.repair_tail(path) is True
    assert path.read_bytes() == good
    assert store.repair_tail(path) is False
    assert path.read_bytes() == good


def test_repair_tail_adds_a_missing_newline(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    whole = line(HEADER) + line(outcome(1))
    path.write_bytes(whole[:-1])
    assert store.repair_tail(path) is True
    assert path.read_bytes() == whole  # the whole last line is kept
    assert store.repair_tail(path) is False


def test_repair_tail_of_a_single_cut_line_and_of_nothing(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    assert store.repair_tail(path) is False  # missing
    path.write_bytes(b"")
    assert store.repair_tail(path) is False  # empty
    path.write_bytes(line(HEADER)[:30])
    assert store.repair_tail(path) is True
    assert path.read_bytes() == b""


# --- .gz cassettes ---------------------------------------------------------------------


def test_gzip_cassette_records_and_replays(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl.gz"
    calls = [(0, 0), (0, 1), (1, 0)]
    record_calls(path, "record", calls)
    data = path.read_bytes()
    assert data[:2] == b"\x1f\x8b"
    lines = gzip.decompress(data).splitlines()
    assert orjson.loads(lines[0])["type"] == "header"
    assert [orjson.loads(raw)["request"] for raw in lines[1:]] == [{"q": [e, n]} for e, n in calls]
    assert not list(tmp_path.glob("*.partial"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replay_calls(path, calls)


def test_gzip_record_writes_plain_lines_then_compresses_them_whole(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl.gz"
    with cassette.open(path, "record") as cas:
        cas.call({"q": [0, 0]}, live=partial(answer, 0, 0), env_index=0)
        side = cas.side_path
        assert side is not None and side.read_bytes().count(b"\n") == 2  # header, call
    assert not side.exists()
    raw = path.read_bytes()
    dec = zlib.decompressobj(wbits=31)
    assert dec.decompress(raw).count(b"\n") == 2
    assert dec.eof and dec.unused_data == b""  # one closed member
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl.gz"]


@pytest.mark.parametrize("name", ["x.jsonl.gz", "x.ndjson.gz", "gzipped.jsonl"])
def test_gzip_cassette_append_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    record_calls(tmp_path / "x.jsonl.gz", "record", [(0, 0)])
    if name != "x.jsonl.gz":  # gzip bytes under another name are refused too
        (tmp_path / "x.jsonl.gz").rename(path)
    old = path.read_bytes()
    with pytest.raises(cassette.CassetteModeError) as caught:
        cassette.open(path, "append")
    msg = str(caught.value)
    assert "\n" not in msg
    shards = tmp_path / ("gzipped" if name == "gzipped.jsonl" else "x")
    assert msg == (
        f"cannot append to {path}: a .gz cassette is written whole (mode='record'), never "
        f"appended to; to append, from one process or several, use a shard directory: "
        f"`mkdir {shards} && mv {path} {shards}/`, then open {shards}/ with mode='append'"
    )
    assert path.read_bytes() == old
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    with cassette.open(path, "auto") as cas:  # reading it stays
        assert cas.call({"q": [0, 0]}, live=no_live, env_index=0) == {"a": [0, 0]}


def test_unclosed_gzip_stream_reads_its_whole_lines_with_a_warning(tmp_path: Path) -> None:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # sync-flushed, no trailer: as if killed
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(comp.compress(line(HEADER) + line(outcome(1))) + comp.flush(zlib.Z_SYNC_FLUSH))
    with pytest.warns(cassette.CassetteWarning, match="gzip stream was not closed"):
        got = list(store.iter_records(path))
    assert got == [(1, HEADER), (2, outcome(1))]


def test_gzip_cut_inside_a_line_reads_the_lines_before_it(tmp_path: Path) -> None:
    # compress two lines with a sync flush, then a third whose bytes are cut halfway
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = comp.compress(line(HEADER) + line(outcome(1))) + comp.flush(zlib.Z_SYNC_FLUSH)
    third = comp.compress(line(outcome(2))) + comp.flush(zlib.Z_SYNC_FLUSH)
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(head + third[: len(third) // 2])
    with pytest.warns(cassette.CassetteWarning) as record:
        got = list(store.iter_records(path))
    assert got == [(1, HEADER), (2, outcome(1))]
    assert any("cut short" in str(w.message) for w in record)


def test_corrupt_gzip_data_is_a_format_error(tmp_path: Path) -> None:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = bytearray(comp.compress(line(HEADER) * 50) + comp.flush())
    data[12:40] = b"\xff" * 28
    path = tmp_path / "c.jsonl.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(cassette.CassetteFormatError, match="gzip data is corrupt"):
        list(store.iter_records(path))


def test_replay_of_an_unclosed_gzip_cassette_warns_and_serves(tmp_path: Path) -> None:
    done = tmp_path / "done.jsonl.gz"
    record_calls(done, "record", [(0, 0), (0, 1)])
    raw = gzip.decompress(done.read_bytes())
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    path = tmp_path / "killed.jsonl.gz"
    path.write_bytes(comp.compress(raw) + comp.flush(zlib.Z_SYNC_FLUSH))  # no trailer
    with pytest.warns(cassette.CassetteWarning, match="not closed"):
        cas = cassette.open(path, "replay")
    with cas:
        assert cas.call({"q": [0, 0]}, live=no_live, env_index=0) == {"a": [0, 0]}
        assert cas.call({"q": [0, 1]}, live=no_live, env_index=0) == {"a": [0, 1]}


# --- shard directories -----------------------------------------------------------------


def test_shard_directory_two_writers_and_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = tmp_path / "run"
    shards.mkdir()
    monkeypatch.setenv("CASSETTE_SHARD", "worker-a")
    record_calls(shards, "append", [(0, 0), (0, 1)])
    monkeypatch.setenv("CASSETTE_SHARD", "worker-b")
    record_calls(shards, "append", [(1, 0), (1, 1)])
    assert store.shard_files(shards) == [shards / "worker-a.jsonl", shards / "worker-b.jsonl"]
    assert sorted(p.name for p in shards.iterdir()) == ["worker-a.jsonl", "worker-b.jsonl"]
    for name, env in (("worker-a.jsonl", 0), ("worker-b.jsonl", 1)):
        records = read_all(shards / name)
        assert records[0][1]["type"] == "header"  # every shard is a whole cassette
        assert [obj["env_index"] for _, obj in records[1:]] == [env, env]
    monkeypatch.delenv("CASSETTE_SHARD")
    replay_calls(shards, [(0, 0), (0, 1), (1, 0), (1, 1)])
    index = load_index([shards])
    assert {(k[0], k[2]) for k in index.entries} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_shard_name_defaults_to_host_and_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CASSETTE_SHARD", raising=False)
    assert store.shard_name().endswith(f"-{os.getpid()}.jsonl")
    monkeypatch.setenv("CASSETTE_SHARD", "w7")
    assert store.shard_name() == "w7.jsonl"


def test_key_collision_across_shards_names_both_places(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = tmp_path / "run"
    shards.mkdir()
    # two workers started together, both recording episode 0 (a sharding mistake)
    monkeypatch.setenv("CASSETTE_SHARD", "w0")
    a = cassette.open(shards, "append")
    monkeypatch.setenv("CASSETTE_SHARD", "w1")
    b = cassette.open(shards, "append")
    for cas in (a, b):
        cas.call({"q": 1}, live=lambda: {"a": 1}, env_index=0)
        cas.close()
    with pytest.warns(cassette.CassetteWarning) as caught:  # the first is served
        cas = cassette.open(shards, "replay")
    msg = str(caught[0].message)
    assert f"{shards / 'w0.jsonl'}:2" in msg
    assert f"{shards / 'w1.jsonl'}:2" in msg
    assert "recorded twice" in msg
    assert cas.call({"q": 1}, live=lambda: {"a": 2}, env_index=0) == {"a": 1}
    cas.close()


# --- format checks on load -------------------------------------------------------------


def test_newer_format_version_asks_for_an_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "future.jsonl"
    path.write_bytes(line({**HEADER, "version": 2, "meta": {"new": True}}) + line(outcome(0)))
    with pytest.raises(cassette.CassetteFormatError) as info:
        cassette.open(path, "replay")
    msg = str(info.value)
    assert "upgrade" in msg
    assert "version 2" in msg
    assert str(path) in msg
    assert "validation error" not in msg  # not a pydantic dump
    assert info.value.__cause__ is None


def test_unknown_line_type_is_an_error_with_its_line_number(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(line(HEADER) + line(outcome(0)) + line({"type": "checkpoint", "n": 1}))
    with pytest.raises(cassette.CassetteFormatError) as info:
        cassette.open(path, "replay")
    assert f"{path}:3" in str(info.value)
    assert "checkpoint" in str(info.value)
    assert info.value.line == 3


def test_malformed_interaction_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record_calls(path, "record", [(0, 0)])
    bad = {"type": "interaction", "env_index": 0, "step": -1, "request": {}}
    path.write_bytes(path.read_bytes() + line({**bad, "request_sha256": "0" * 64}))
    with pytest.raises(cassette.CassetteFormatError, match=r"c\.jsonl:3: step"):
        cassette.open(path, "replay")
