"""A cassette rewritten in place (``cassette redact FILE``, ``cassette merge FILE FILE``,
``cassette import DATASET FILE --force``) while processes are appending to it. The rewrite
renames a new file over the old one; before, an appender kept writing into the old file
(its open descriptor), and every call it made after the rewrite was lost with it (80 of
100 in the first test). Now the rewrite holds the append lock from its read to its
rename, and an appender that finds the file replaced appends to the new one."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

import cassette
from cassette.dataset.convert import merge, redact
from cassette.dataset.validate import validate
from tests.helpers.procs import Workers
from tests.helpers.worker import request_for, response_for


def _import_over(path: Path) -> None:
    pytest.importorskip("pyarrow")
    from cassette.dataset.export import export_parquet, import_parquet

    export_parquet(path, path.with_name("ds"))
    import_parquet(path.with_name("ds"), path)


REWRITES: dict[str, Callable[[Path], object]] = {
    "redact": redact,
    "merge": lambda path: merge(path, [path], on_conflict="first"),
    "import": _import_over,
}


def _replays_all(path: Path, envs: range, steps: int) -> None:
    with cassette.open(path, "replay") as cas:
        for env in envs:
            for step in range(steps):
                got = cas.call(request_for(env, step), live=None, env_index=env, step=step)
                assert got == response_for(env, step)
    assert validate(path).ok


@pytest.mark.parametrize("how", sorted(REWRITES))
def test_an_appender_paused_across_a_rewrite_loses_nothing(
    tmp_path: Path, workers: Workers, how: str
) -> None:
    path, go = tmp_path / "a.jsonl", tmp_path / "go"
    proc = workers.start(str(path), "append", "--envs", "0,1", "--steps", "20",
                         "--pause-after", "10", "--go", str(go))  # fmt: skip
    assert workers.read_line(proc).startswith("READY 10")  # its file open
    REWRITES[how](path)
    go.touch()
    out, err = workers.finish(proc)
    assert proc.returncode == 0, err
    assert "LIVE 40" in out
    _replays_all(path, range(2), 20)


def test_rewrites_in_a_loop_while_two_processes_append(tmp_path: Path, workers: Workers) -> None:
    path = tmp_path / "b.jsonl"
    procs = [
        workers.start(str(path), "append", "--envs", str(env), "--steps", "60", "--sleep", "0.003")
        for env in (0, 1)
    ]
    deadline = time.monotonic() + 30
    rewrites = 0
    while any(p.poll() is None for p in procs):
        assert time.monotonic() < deadline
        if path.exists() and path.stat().st_size:
            redact(path)
            merge(path, [path], on_conflict="first")
            rewrites += 2
    for proc in procs:
        out, err = workers.finish(proc)
        assert proc.returncode == 0 and "LIVE 60" in out, err
    assert rewrites >= 2
    _replays_all(path, range(2), 60)


def test_an_appender_in_the_same_process_follows_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with cassette.open(path, "append") as cas:
        for step in range(6):
            if step == 3:
                redact(path)  # (the same process: no deadlock on its own lock)
            cas.call(request_for(0, step), live=lambda s=step: response_for(0, s), step=step)
    _replays_all(path, range(1), 6)


REWRITER = """
import sys
from pathlib import Path
from cassette.dataset.convert import merge, redact
path, stop, done = Path(sys.argv[1]), Path(sys.argv[2]), 0
print("READY", flush=True)
while not stop.exists():
    if path.exists() and path.stat().st_size:
        redact(path)
        merge(path, [path], on_conflict="first")
        done += 2
print("REWRITES", done, flush=True)
"""


def test_two_rewriting_processes_and_two_appenders(tmp_path: Path, workers: Workers) -> None:
    """Two processes rewrite the file in place in a loop while two append: a rewrite that
    waited for the lock while the other replaced the file locks the new one (before, it
    held the old one's lock, and what was appended during its read was lost)."""
    script = tmp_path / "rewriter.py"
    script.write_text(REWRITER)
    path, stop = tmp_path / "d.jsonl", tmp_path / "stop"
    rewriters = Workers(script)
    try:
        loops = [rewriters.start(str(path), str(stop)) for _ in range(2)]
        for proc in loops:
            assert rewriters.read_line(proc) == "READY"
        args = ("append", "--steps", "40", "--sleep", "0.002")
        procs = [workers.start(str(path), *args, "--envs", str(env)) for env in (0, 1)]
        for proc in procs:
            out, err = workers.finish(proc)
            assert proc.returncode == 0 and "LIVE 40" in out, err
        stop.touch()
        for proc in loops:
            out, err = rewriters.finish(proc)
            assert proc.returncode == 0 and "REWRITES" in out, err
    finally:
        stop.touch()
        rewriters.cleanup()
    _replays_all(path, range(2), 40)


def test_a_file_replaced_by_a_link_is_refused_and_its_lock_released(tmp_path: Path) -> None:
    import fcntl
    import os

    path, elsewhere = tmp_path / "e.jsonl", tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(b"")
    with cassette.open(path, "append") as cas:
        cas.call(request_for(0, 0), live=lambda: response_for(0, 0), step=0)
        old = os.open(path, os.O_RDONLY)
        link = tmp_path / "link"
        link.symlink_to(elsewhere)
        os.replace(link, path)  # a link planted where the cassette was
        try:
            with pytest.raises(cassette.CassetteError, match="symbolic link"):
                cas.call(request_for(0, 1), live=lambda: response_for(0, 1), step=1)
            fcntl.flock(old, fcntl.LOCK_EX | fcntl.LOCK_NB)  # (the old file's lock is free)
        finally:
            os.close(old)
        path.unlink()
    assert elsewhere.read_bytes() == b""  # nothing written through the link
