"""Where a cassette writes: record mode's side file, replaced atomically on a clean
close, and shard directories."""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path

import pytest

import cassette
from cassette.storage.index import load_index
from tests.helpers.records import answer, no_live, read_all, record_calls, replay_calls


def test_record_mode_writes_a_side_file_and_replaces_on_close(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record_calls(path, "record", [(0, 0), (0, 1)])
    old = path.read_bytes()
    cas = cassette.open(path, "record")
    assert cas.side_path is not None
    assert cas.side_path.parent == tmp_path
    assert re.fullmatch(rf"c\.jsonl\.{os.getpid()}\.[0-9a-f]{{12}}\.partial", cas.side_path.name)
    cas.call({"q": "new"}, live=lambda: {"a": "new"})
    assert path.read_bytes() == old  # untouched until close
    side = read_all(cas.side_path)
    assert [obj["type"] for _, obj in side] == ["header", "interaction"]
    assert side[1][1]["response"] == {"a": "new"}
    cas.close()
    assert not cas.side_path.exists()
    records = read_all(path)
    assert [obj.get("request") for _, obj in records] == [None, {"q": "new"}]
    with cassette.open(path, "replay") as replay:
        assert replay.call({"q": "new"}, live=no_live) == {"a": "new"}


def test_side_path_is_none_outside_record_mode(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record_calls(path, "record", [(0, 0)])
    for mode in ("replay", "append", "passthrough", "auto"):
        with cassette.open(path, mode) as cas:
            assert cas.side_path is None


def test_exception_in_record_mode_keeps_old_cassette_and_the_side_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    record_calls(path, "record", [(0, 0)])
    old = path.read_bytes()
    opened: list[cassette.Cassette] = []

    def failing_run() -> None:
        with cassette.open(path, "record") as cas:
            opened.append(cas)
            for n in range(3):
                cas.call({"q": ["new", n]}, live=partial(answer, "new", n))
            raise RuntimeError("agent crashed")

    with pytest.raises(RuntimeError, match="agent crashed") as info:
        failing_run()
    side = opened[0].side_path
    assert side is not None
    assert side.parent == tmp_path
    assert side.name.startswith(f"c.jsonl.{os.getpid()}.")
    assert path.read_bytes() == old
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert str(side) in notes
    assert str(path) in notes
    assert side.exists()
    with cassette.open(side, "replay") as replay:
        for n in range(3):
            assert replay.call({"q": ["new", n]}, live=no_live) == {"a": ["new", n]}
        assert replay.unused() == []
    # the old recording still replays as before
    replay_calls(path, [(0, 0)])


def _fail_in_record(path: Path, *, outcome: bool) -> tuple[RuntimeError, Path | None]:
    """Open ``path`` in record mode and fail (after recording an outcome, if asked);
    returns the exception and the side file's path."""
    opened: list[cassette.Cassette] = []
    try:
        with cassette.open(path, "record") as cas:
            opened.append(cas)
            side = cas.side_path
            assert side is not None and side.exists()  # written from the open on
            if outcome:
                cas.outcome(0, reward=1.0)
            raise RuntimeError("the agent failed")
    except RuntimeError as exc:
        return exc, opened[0].side_path


@pytest.mark.parametrize("name", ["c.jsonl", "c.jsonl.gz"])
def test_a_run_that_fails_before_any_call_leaves_no_side_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    record_calls(path, "record", [(0, 0)])
    old = path.read_bytes()
    exc, side = _fail_in_record(path, outcome=False)
    assert side is not None and not side.exists()  # nothing in it to inspect
    assert not getattr(exc, "__notes__", [])  # so no note names it
    assert path.read_bytes() == old and sorted(tmp_path.iterdir()) == [path]
    exc, side = _fail_in_record(path, outcome=True)  # an outcome is something recorded
    assert side is not None and side.exists() and str(side) in "".join(exc.__notes__)


def test_record_on_a_shard_directory_replaces_the_old_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()  # a directory cassette: an existing directory (or a path ending in /)
    for shard in ("old-a", "old-b"):
        monkeypatch.setenv("CASSETTE_SHARD", shard)
        with cassette.open(run_dir, "append") as cas:
            cas.call({"q": shard}, live=lambda s=shard: {"a": s}, env_index=shard)
    monkeypatch.setenv("CASSETTE_SHARD", "new")
    with cassette.open(run_dir, "record") as cas:
        cas.call({"q": "new"}, live=lambda: {"a": "new"})
        # until a clean close, the old shards are still the cassette
        assert sorted(p.name for p in run_dir.glob("*.jsonl")) == ["old-a.jsonl", "old-b.jsonl"]
    assert sorted(p.name for p in run_dir.glob("*.jsonl")) == ["new.jsonl"]
    with cassette.open(run_dir, "replay") as cas:
        assert cas.call({"q": "new"}, live=lambda: {}) == {"a": "new"}


def test_workers_of_one_record_run_keep_each_others_shards(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("CASSETTE_RUN", "run-1")
    for worker in ("w0", "w1"):  # w0 closes before w1 opens: both belong to run-1
        monkeypatch.setenv("CASSETTE_SHARD", worker)
        with cassette.open(run_dir, "record") as cas:
            cas.call({"q": worker}, live=lambda w=worker: {"a": w}, env_index=worker)
    assert sorted(p.name for p in run_dir.glob("*.jsonl")) == ["w0.jsonl", "w1.jsonl"]


def test_a_worker_that_opens_its_shard_again_in_the_same_run_keeps_its_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    monkeypatch.setenv("CASSETTE_SHARD", "w0")
    monkeypatch.setenv("CASSETTE_RUN", "run-1")
    for task in (0, 1):  # a pool worker opens the cassette once per task
        with cassette.open(f"{run_dir}/", "record") as cas:
            cas.call({"q": task}, live=lambda t=task: {"a": t}, env_index=task)
    with cassette.open(run_dir, "replay") as cas:
        assert [cas.call({"q": t}, live=no_live, env_index=t) for t in (0, 1)] == [
            {"a": 0},
            {"a": 1},
        ]
    monkeypatch.setenv("CASSETTE_RUN", "run-2")  # a new run starts the shard again
    with cassette.open(f"{run_dir}/", "record") as cas:
        cas.call({"q": 2}, live=lambda: {"a": 2}, env_index=2)
    assert len(load_index([run_dir]).entries) == 1


def test_auto_on_an_empty_directory_records(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with cassette.open(run_dir) as cas:
        assert cas.mode is cassette.Mode.RECORD
        cas.call({"q": 1}, live=lambda: {"a": 1})
    with cassette.open(run_dir) as cas:
        assert cas.mode is cassette.Mode.REPLAY
