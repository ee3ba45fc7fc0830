"""Crashes: a recording process killed with SIGKILL, and a line cut in half.

A kill must never cost the old cassette (record mode) nor anything already flushed
(the side file in record mode, the cassette itself in append mode)."""

from __future__ import annotations

import os
import signal
import warnings
import zlib
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest

import cassette
from cassette.storage import store
from cassette.storage.index import load_index
from tests.helpers.procs import Workers
from tests.helpers.worker import request_for, response_for


def no_live() -> dict[str, Any]:
    raise AssertionError("replay must not call the live function")


def plan(envs: list[int], steps: int) -> list[tuple[int, int]]:
    """The (env, step) calls the worker makes, in its order."""
    return [(env, step) for env in envs for step in range(steps)]


def play(cas: cassette.Cassette, calls: list[tuple[int, int]], live_log: list[Any]) -> None:
    """Make the worker conversation's calls; ``live_log`` collects the live ones."""

    def live(env: int, step: int) -> dict[str, Any]:
        live_log.append((env, step))
        return response_for(env, step)

    for env, step in calls:
        with cassette.episode(env):
            resp = cas.call(request_for(env, step), live=partial(live, env, step))
            assert resp == response_for(env, step)


def check_replays(path: Path, calls: list[tuple[int, int]]) -> None:
    """``path`` replays exactly ``calls`` (any warning fails the test)."""
    with cassette.open(path, "replay") as cas:
        live: list[tuple[int, int]] = []
        play(cas, calls, live)
        assert live == []
        assert cas.unused() == []


def interaction_keys(path: Path) -> Counter[tuple[int, int]]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        records = [obj for _, obj in store.iter_records(path)]
    return Counter((o["env_index"], o["step"]) for o in records if o["type"] == "interaction")


def kill(proc: Any) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL


# --- SIGKILL in record mode ------------------------------------------------------------


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_kill_in_record_mode_keeps_old_cassette_and_the_side_file(
    tmp_path: Path, workers: Workers, name: str
) -> None:
    path = tmp_path / name
    old_calls = plan([50, 51], 2)
    with cassette.open(path, "record") as cas:
        play(cas, old_calls, [])
    old = path.read_bytes()

    flushed = 7
    proc = workers.start(
        str(path), "record", "--envs", "0,1,2", "--steps", "4", "--pause-after", str(flushed)
    )
    assert workers.read_line(proc) == f"READY {flushed} {proc.pid}"
    kill(proc)

    assert path.read_bytes() == old  # byte-identical
    check_replays(path, old_calls)
    # left: the cassette, the side file (named by pid and a random part) and the lock
    # file, which the kernel unlocked when the process died
    (side,) = tmp_path.glob(f"{name}.{proc.pid}.*.partial")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, side.name, name + ".lock"])
    recorded = plan([0, 1, 2], 4)[:flushed]
    # a .gz cassette is compressed on a clean close: its side file holds plain lines
    assert side.read_bytes()[:1] == b"{"
    assert interaction_keys(side) == Counter(recorded)
    index = load_index([side])
    cas = cassette.open(side, "replay")
    assert len(index.headers) == 1
    assert {(e, s): entry.full_request() for (e, _, s), entry in index.entries.items()} == {
        (e, s): request_for(e, s) for e, s in recorded
    }
    with cas:
        live: list[tuple[int, int]] = []
        play(cas, recorded, live)
        assert live == []
        assert cas.unused() == []


# --- SIGKILL in append mode ------------------------------------------------------------


def test_kill_in_append_mode_then_resume(tmp_path: Path, workers: Workers) -> None:
    path = tmp_path / "run.jsonl"
    earlier = plan([9], 3)  # recorded by an earlier, finished run
    with cassette.open(path, "record") as cas:
        play(cas, earlier, [])

    calls = plan([0, 1, 2], 5)
    flushed = 8
    proc = workers.start(
        str(path), "append", "--envs", "0,1,2", "--steps", "5", "--pause-after", str(flushed)
    )
    assert workers.read_line(proc) == f"READY {flushed} {proc.pid}"
    before_kill = path.read_bytes()
    kill(proc)
    assert path.read_bytes() == before_kill  # append mode writes in place, no side file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]
    assert interaction_keys(path) == Counter(earlier + calls[:flushed])

    # a second run resumes: what was flushed is served, the rest is recorded
    with cassette.open(path, "append") as cas:
        live: list[tuple[int, int]] = []
        play(cas, earlier + calls, live)
    assert live == calls[flushed:]
    assert path.read_bytes().startswith(before_kill)  # nothing rewritten
    assert interaction_keys(path) == Counter(earlier + calls)
    index = load_index([path])
    for (env, _, step), entry in index.entries.items():
        assert entry.full_request() == request_for(env, step)
    check_replays(path, earlier + calls)


def test_killed_worker_resumed_by_another_worker_process(tmp_path: Path, workers: Workers) -> None:
    path = tmp_path / "run.jsonl"
    args = ("--envs", "3,4", "--steps", "6")
    first = workers.start(str(path), "append", *args, "--pause-after", "5")
    assert workers.read_line(first).startswith("READY 5 ")
    kill(first)
    second = workers.start(str(path), "append", *args)
    out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert out.split() == ["LIVE", "7"]  # 12 calls, 5 of them served from the cassette
    assert interaction_keys(path) == Counter(plan([3, 4], 6))
    check_replays(path, plan([3, 4], 6))


# --- a line cut in half ----------------------------------------------------------------


def _append_half_line(path: Path, half: bytes) -> None:
    if path.name.endswith(".gz"):
        # a new gzip member, sync-flushed mid-line and never closed
        comp = zlib.compressobj(9, zlib.DEFLATED, 31)
        tail = comp.compress(half) + comp.flush(zlib.Z_SYNC_FLUSH)
    else:
        tail = half
    with open(path, "ab") as f:
        f.write(tail)


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_half_written_last_line(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    whole = plan([0], 4)
    with cassette.open(path, "record") as cas:
        play(cas, whole, [])
    good = path.read_bytes()
    # the line a crashed writer was writing: the next interaction, cut in half
    other = tmp_path / "other.jsonl"
    with cassette.open(other, "record") as cas:
        play(cas, plan([0], 5), [])
    next_line = other.read_bytes().splitlines()[-1]
    assert orjson.loads(next_line)["step"] == 4
    _append_half_line(path, next_line[: len(next_line) // 2])

    # replay: a warning naming the line, and everything before it is served
    with pytest.warns(cassette.CassetteWarning, match="cut short") as caught:
        cas = cassette.open(path, "replay")
    assert any(f"{path}:{len(whole) + 2}" in str(w.message) for w in caught)
    with cas:
        live: list[tuple[int, int]] = []
        play(cas, whole, live)
        assert live == []
        with pytest.raises(cassette.CassetteMiss):
            play(cas, [(0, 4)], [])

    # append: the fragment is cut off before anything is written (a .gz is written whole)
    if name.endswith(".gz"):
        warned = pytest.warns(cassette.CassetteWarning, match="cut short")
        with warned, pytest.raises(cassette.CassetteModeError, match="shard directory"):
            cassette.open(path, "append")
        return
    with pytest.warns(cassette.CassetteWarning, match="cut short"):
        cas = cassette.open(path, "append")
    with cas:
        appended: list[tuple[int, int]] = []
        play(cas, plan([0], 6), appended)
    assert appended == [(0, 4), (0, 5)]
    assert path.read_bytes().startswith(good)
    assert path.read_bytes().count(b"\n") == 1 + 6
    assert interaction_keys(path) == Counter(plan([0], 6))
    check_replays(path, plan([0], 6))


def test_append_onto_a_header_cut_short_writes_the_header_again(tmp_path: Path) -> None:
    # a recorder killed while writing its header leaves only a fragment of it
    path = tmp_path / "run.jsonl"
    with cassette.open(tmp_path / "whole.jsonl", "record"):
        pass
    header = (tmp_path / "whole.jsonl").read_bytes()
    path.write_bytes(header[: len(header) // 2])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cassette.CassetteWarning)  # (the fragment, named)
        with cassette.open(path, "append") as cas:
            play(cas, plan([0], 2), [])
    assert orjson.loads(path.read_bytes().splitlines()[0])["type"] == "header"
    assert interaction_keys(path) == Counter(plan([0], 2))
    check_replays(path, plan([0], 2))


def test_line_cut_short_by_another_appender_is_cut_off_before_the_next_line(
    tmp_path: Path,
) -> None:
    # two appenders share a file; one is killed mid-write (its half line is left under the
    # lock it held); the other's next line must not be glued onto that half line
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        play(cas, plan([0], 2), [])
    other = tmp_path / "other.jsonl"
    with cassette.open(other, "record") as cas:
        play(cas, plan([3], 1), [])
    half = other.read_bytes().splitlines()[-1]
    with cassette.open(path, "append") as cas:
        play(cas, plan([1], 1), [])
        with open(path, "ab") as f:  # what a writer killed mid-write leaves
            f.write(half[: len(half) // 2])
        play(cas, plan([2], 1), [])
    assert interaction_keys(path) == Counter(plan([0], 2) + plan([1, 2], 1))
    check_replays(path, plan([0], 2) + plan([1, 2], 1))


def test_half_written_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    # a cut line that was written over by later lines is not a crash artefact to skip
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        play(cas, plan([0], 2), [])
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1][:40] + b"\n" + lines[2])
    with pytest.raises(cassette.CassetteFormatError, match=r"run\.jsonl:2"):
        cassette.open(path, "replay")


# --- leftovers of a failed recording ----------------------------------------------------


def test_record_again_after_a_failed_record_in_the_same_process(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    opened: list[cassette.Cassette] = []

    def failing_run() -> None:
        with cassette.open(path, "record") as cas:
            opened.append(cas)
            play(cas, plan([0], 2), [])
            raise RuntimeError("the agent crashed")

    with pytest.raises(RuntimeError, match="the agent crashed"):
        failing_run()
    side = opened[0].side_path
    assert side is not None
    assert side.exists()  # kept for inspection
    # a retry in the same process (pytest session, notebook) records from scratch
    with cassette.open(path, "record") as cas:
        play(cas, plan([0], 3), [])
    assert interaction_keys(path) == Counter(plan([0], 3))
    check_replays(path, plan([0], 3))
    # ... and the failed run's side file is still there, untouched
    assert side.exists()
    with cassette.open(side, "replay") as old:
        assert len(old.index.entries) == 2
