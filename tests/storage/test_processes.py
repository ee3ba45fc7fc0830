"""Real processes sharing one cassette: N appenders to a plain file, appenders to a
``.gz`` file refused at open (the shard directory the refusal names takes them), several
recorders of one file (the second is refused at open), kill -9 at random moments with
every call that returned before the kill read back, and a write that fails on a file
size limit (``RLIMIT_FSIZE``). The concurrency contract these check is in README."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import warnings
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.dataset.validate import validate
from cassette.storage.index import load_index
from tests.helpers.caller import request_of, response_of
from tests.helpers.procs import CALLER
from tests.helpers.procs import Workers as Callers


@pytest.fixture
def callers() -> Iterator[Callers]:
    started = Callers(CALLER, line_timeout=60)
    yield started
    started.cleanup()


def recorded(path: Path) -> dict[tuple[str, int], Any]:
    """(tag, call) -> response of every interaction in ``path``; the warnings a killed
    writer leaves (an unclosed gzip member, a cut-short last line) are allowed."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cassette.CassetteWarning)
        index = load_index([path])
    return {(str(env), step): e.response for (env, _, step), e in index.entries.items()}


def run_together(
    callers: Callers, path: Path | str, mode: str, tags: list[str], calls: int
) -> None:
    """Start one caller per tag, all opened before any calls, and wait for them all."""
    go = Path(path).with_name(f"go-{random.randrange(1 << 30)}")
    procs = [
        callers.start(str(path), mode, "--tag", t, "--calls", str(calls), "--go", str(go))
        for t in tags
    ]
    for proc in procs:
        assert callers.read_line(proc) == "OPEN"
    go.touch()
    for proc in procs:
        out, err = callers.finish(proc)
        assert proc.returncode == 0, (out[-300:], err[-2000:])
        assert out.split()[-1] == "CLOSED"
        assert out.count("DONE") == calls


def check_all(
    path: Path, tags: list[str], calls: int, extra: Collection[tuple[str, int]] = ()
) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every member closed, every line whole
        got = recorded(path)
    want = {(t, i): response_of(t, i) for t in tags for i in range(calls)}
    want.update({(t, i): response_of(t, i) for t, i in extra})
    assert len(got) == len(want)
    assert got == want
    report = validate(path)
    assert report.ok, report.faults[:3]
    assert report.warnings == []
    assert report.lines["interaction"] == len(want)


# --- N processes appending to one file ---------------------------------------------------


def test_8_processes_append_200_calls_each_to_one_file(tmp_path: Path, callers: Callers) -> None:
    path = tmp_path / "shared.jsonl"
    tags = [f"p{n}" for n in range(8)]
    run_together(callers, path, "append", tags, 200)
    check_all(path, tags, 200)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("go-")) == [
        "shared.jsonl"
    ]


def _refused(callers: Callers, path: Path) -> str:
    """The one line a process that opens ``path`` to append prints, refused (exit 3)."""
    proc = callers.start(str(path), "append", "--tag", "x", "--calls", "1")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    (line,) = out.splitlines()
    assert line.startswith(f"ERROR cannot append to {path}: a .gz cassette is written whole")
    return line


def test_append_to_a_gz_is_refused_in_one_line_and_its_fix_works_as_written(
    tmp_path: Path, callers: Callers
) -> None:
    path = tmp_path / "shared.jsonl.gz"
    with cassette.open(path, "record") as cas:
        cas.call(request_of("old", 0), live=lambda: response_of("old", 0), env_index="old")
    old = path.read_bytes()
    line = _refused(callers, path)
    assert path.read_bytes() == old  # untouched, and nothing left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared.jsonl.gz"]
    # the fix, followed as written: move it into a shard directory, append to that
    found = re.search(r"`([^`]+)`, then open (\S+) with mode='append'$", line)
    assert found is not None, line
    subprocess.run(found.group(1), shell=True, check=True, cwd=tmp_path)
    shards = Path(found.group(2))
    assert shards == tmp_path / "shared"
    tags = [f"p{n}" for n in range(8)]
    run_together(callers, shards, "append", tags, 50)
    check_all(shards, tags, 50, extra={("old", 0)})
    assert len(list(shards.iterdir())) == 1 + 8  # the .gz, and a shard per process


def test_append_to_a_new_gz_names_the_shard_directory_alone(
    tmp_path: Path, callers: Callers
) -> None:
    path = tmp_path / "new.ndjson.gz"
    line = _refused(callers, path)
    shards = f"{tmp_path / 'new'}/"
    assert line.endswith(f"use a shard directory: open {shards} with mode='append'")
    assert list(tmp_path.iterdir()) == []
    tags = ["a", "b"]
    run_together(callers, shards, "append", tags, 20)  # (a new directory, for the slash)
    check_all(tmp_path / "new", tags, 20)


# --- record: one recorder of a file at a time --------------------------------------------


def test_second_recorder_of_a_file_is_refused_at_open(tmp_path: Path, callers: Callers) -> None:
    path = tmp_path / "rec.jsonl"
    go = tmp_path / "go"
    first = callers.start(str(path), "record", "--tag", "a", "--calls", "50", "--go", str(go))
    assert callers.read_line(first) == "OPEN"
    second = callers.start(str(path), "record", "--tag", "b", "--calls", "50")
    line = callers.read_line(second)
    assert line.startswith(f"ERROR {path} is being recorded by another process (pid {first.pid})")
    assert "mode='append'" in line
    assert second.wait(timeout=30) == 3
    # in this process too, while the other holds the file
    with pytest.raises(cassette.CassetteModeError, match="being recorded by another process"):
        cassette.open(path, "record")
    go.touch()
    _, err = callers.finish(first)
    assert first.returncode == 0, err
    assert recorded(path) == {("a", i): response_of("a", i) for i in range(50)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["go", "rec.jsonl"]  # lock removed
    with cassette.open(path, "record") as cas:  # free again
        cas.call(request_of("c", 0), live=lambda: response_of("c", 0), env_index="c")


def test_8_processes_record_one_file_one_wins_the_rest_are_refused(
    tmp_path: Path, callers: Callers
) -> None:
    path = tmp_path / "rec.jsonl.gz"
    go = tmp_path / "go"
    procs = {
        f"p{n}": callers.start(
            str(path), "record", "--tag", f"p{n}", "--calls", "200", "--go", str(go)
        )
        for n in range(8)
    }
    first = {tag: callers.read_line(proc) for tag, proc in procs.items()}
    opened = [tag for tag, line in first.items() if line == "OPEN"]
    go.touch()
    assert len(opened) == 1
    (winner,) = opened
    for tag, proc in procs.items():
        out, err = callers.finish(proc)
        if tag == winner:
            assert proc.returncode == 0, err
        else:  # refused before any call: nothing of theirs was lost silently
            assert proc.returncode == 3
            assert "being recorded by another process" in first[tag]
            assert "DONE" not in out
    check_all(path, [winner], 200)


def test_in_process_second_recorder_and_recorder_after_abort(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    first = cassette.open(path, "record")
    with pytest.raises(cassette.CassetteModeError, match=r"mode='append'"):
        cassette.open(path, "record")
    with cassette.open(path, "append") as other:  # other modes do not take the lock
        assert other.mode is cassette.Mode.APPEND
    first.abort()
    with cassette.open(path, "record") as cas:
        cas.call({"q": 1}, live=lambda: {"a": 1})
    assert not path.with_name("c.jsonl.lock").exists()


# --- kill -9 at random moments -------------------------------------------------------------


def _kill_at_random(
    callers: Callers, path: Path, mode: str, tag: str, rng: random.Random
) -> set[int]:
    """Start a caller, let it make a random number of calls, SIGKILL it; the calls it
    reported as returned before the kill."""
    proc = callers.start(str(path), mode, "--tag", tag, "--calls", "100000")
    assert callers.read_line(proc) == "OPEN"
    target = rng.randrange(1, 300)
    done: set[int] = set()
    while len(done) < target:
        line = callers.read_line(proc)
        assert line.startswith("DONE"), line
        done.add(int(line.split()[1]))
    os.kill(proc.pid, signal.SIGKILL)
    out, _ = callers.finish(proc)
    assert proc.returncode == -signal.SIGKILL
    done.update(int(x.split()[1]) for x in out.splitlines() if x.startswith("DONE"))
    return done


def _kill_rounds(tmp_path: Path, callers: Callers, name: str, mode: str, kills: int) -> None:
    rng = random.Random(f"{name}-{mode}-{kills}")
    path = tmp_path / name
    with cassette.open(path, "record") as cas:  # an old cassette a record run must keep
        cas.call(request_of("old", 0), live=lambda: response_of("old", 0), env_index="old")
    old = path.read_bytes()
    completed = lost = 0
    for k in range(kills):
        tag = f"k{k}"
        done = _kill_at_random(callers, path, mode, tag, rng)
        if mode == "record":
            assert path.read_bytes() == old
            (side,) = tmp_path.glob(f"{name}.*.partial")
            got = recorded(side)
            side.unlink()
        else:
            got = recorded(path)
        have = {i for (t, i), resp in got.items() if t == tag and resp == response_of(t, i)}
        completed += len(done)
        lost += len(done - have)
        assert done <= have, f"kill {k}: lost calls {sorted(done - have)[:10]}"
        assert have - done <= {max(done) + 1}  # at most the call in flight
    if mode == "append":  # a clean appender after the kills repairs the tail
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cassette.CassetteWarning)  # the killed one's tail
            cas = cassette.open(path, "append")
        with cas:
            cas.call(request_of("end", 0), live=lambda: response_of("end", 0), env_index="end")
        report = validate(path)
        assert report.ok, report.faults[:3]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert ("end", 0) in recorded(path)
    print(f"{name} {mode}: {kills} kills, {completed} completed calls, {lost} lost")
    assert lost == 0


KILLS = [("run.jsonl", "append"), ("run.jsonl", "record"), ("run.jsonl.gz", "record")]


@pytest.mark.parametrize(("name", "mode"), KILLS)
def test_kill_9_loses_no_returned_call(
    tmp_path: Path, callers: Callers, name: str, mode: str
) -> None:
    _kill_rounds(tmp_path, callers, name, mode, kills=3)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "mode"), KILLS)
def test_kill_9_loses_no_returned_call_many_kills(
    tmp_path: Path, callers: Callers, name: str, mode: str
) -> None:
    _kill_rounds(tmp_path, callers, name, mode, kills=12)


def test_kill_9_during_append_by_several_processes(tmp_path: Path, callers: Callers) -> None:
    # two processes append to one file; one is killed, the other goes on and closes
    path = tmp_path / "run.jsonl"
    go = tmp_path / "go"
    steady = callers.start(str(path), "append", "--tag", "s", "--calls", "400", "--go", str(go))
    victim = callers.start(str(path), "append", "--tag", "v", "--calls", "100000", "--go", str(go))
    assert callers.read_line(steady) == "OPEN"
    assert callers.read_line(victim) == "OPEN"
    go.touch()
    done: set[int] = set()
    while len(done) < 150:
        done.add(int(callers.read_line(victim).split()[1]))
    os.kill(victim.pid, signal.SIGKILL)
    out, _ = callers.finish(victim)
    done.update(int(x.split()[1]) for x in out.splitlines() if x.startswith("DONE"))
    out, err = callers.finish(steady)
    assert steady.returncode == 0, err
    got = recorded(path)
    assert {i for t, i in got if t == "s"} == set(range(400))
    assert done <= {i for t, i in got if t == "v"}
    assert validate(path).ok


# --- a write that fails: RLIMIT_FSIZE ------------------------------------------------------


def test_file_size_limit_in_append_mode_keeps_the_file_whole(
    tmp_path: Path, callers: Callers
) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call(request_of("old", 0), live=lambda: response_of("old", 0), env_index="old")
    limit = path.stat().st_size + 40_000
    proc = callers.start(
        str(path),
        "append",
        "--tag",
        "f",
        "--calls",
        "10000",
        "--fsize",
        str(limit),
        "--bulk",
        "3000",
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    lines = out.splitlines()
    errors = [x for x in lines if x.startswith("ERROR")]
    assert errors and errors[0].startswith(f"ERROR cannot write to {path}: ")
    assert "File too large" in errors[0]
    done = {int(x.split()[1]) for x in lines if x.startswith("DONE")}
    assert 3 < len(done) < 100
    assert path.stat().st_size <= limit
    assert path.read_bytes().endswith(b"\n")  # no half line for the next to glue onto
    got = recorded(path)
    assert {i for t, i in got if t == "f"} == done
    # the next writer appends whole lines after it, and everything reads
    with cassette.open(path, "append") as cas:
        cas.call(request_of("next", 0), live=lambda: response_of("next", 0), env_index="next")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = recorded(path)
    assert {i for t, i in got if t == "f"} == done
    assert ("next", 0) in got
    report = validate(path)
    assert report.ok, report.faults[:3]


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_file_size_limit_in_record_mode_never_replaces_the_cassette(
    tmp_path: Path, callers: Callers, name: str
) -> None:
    path = tmp_path / name
    with cassette.open(path, "record") as cas:
        cas.call(request_of("old", 0), live=lambda: response_of("old", 0), env_index="old")
    old = path.read_bytes()
    proc = callers.start(
        str(path), "record", "--tag", "f", "--calls", "10000", "--fsize", "30000", "--bulk", "3000"
    )
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    errors = [x for x in out.splitlines() if x.startswith("ERROR")]
    (side,) = tmp_path.glob(f"{name}.*.partial")
    assert errors[0].startswith(f"ERROR cannot write to {side}: ")
    # the caller closed the cassette after the error: refused, naming both files
    assert errors[1].startswith(f"ERROR {path} was left untouched: a write to {side} failed")
    assert path.read_bytes() == old
    done = {int(x.split()[1]) for x in out.splitlines() if x.startswith("DONE")}
    assert done
    assert {i for t, i in recorded(side) if t == "f"} == done
    assert not path.with_name(name + ".lock").exists()
