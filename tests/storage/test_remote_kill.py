"""The README's promise for object storage, measured: a worker killed with SIGKILL while it
records steadily loses at most the calls of its last part budget (time or bytes). A
worker process records one call every few milliseconds into an S3 shard directory (moto
on 127.0.0.1), printing each call's completion time; it is killed mid-run, and replay
must serve every call that completed more than one budget (plus the uploader's poll and
an upload's time) before the kill, as a prefix of what was recorded."""

from __future__ import annotations

import os
import signal
import textwrap
import time
from pathlib import Path

import pytest

import cassette
from tests.helpers.procs import Workers
from tests.helpers.s3server import S3
from tests.helpers.worker import request_for, response_for

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

STEADY = textwrap.dedent(
    """
    import sys, time
    import cassette
    from tests.helpers.worker import request_for, response_for

    with cassette.open(sys.argv[1], "record") as cas:
        for step in range(100_000):
            cas.call(request_for(0, step), live=lambda s=step: response_for(0, s), step=step)
            print("DONE", step, time.monotonic(), flush=True)
            time.sleep(0.004)
    """
)
SLACK = 0.6  # the uploader's 0.1 s poll, a part's upload to moto, a busy machine


@pytest.mark.parametrize(
    ("seconds", "size"), [("0.4", str(1 << 30)), ("1000", "4096")], ids=["time", "bytes"]
)
def test_a_killed_worker_loses_at_most_its_last_part_budget(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seconds: str, size: str
) -> None:
    script = tmp_path / "steady.py"
    script.write_text(STEADY)
    monkeypatch.setenv("CASSETTE_PART_SECONDS", seconds)
    monkeypatch.setenv("CASSETTE_PART_BYTES", size)
    monkeypatch.setenv("CASSETTE_SHARD", "steady")
    url = s3.url(f"kill-{seconds}/")
    workers = Workers(script)
    try:
        proc = workers.start(url)
        done: list[tuple[int, float]] = []
        while not done or done[-1][1] - done[0][1] < 2.0:  # 2 s of steady recording
            _, step, at = workers.read_line(proc).split()
            done.append((int(step), float(at)))
        os.kill(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.wait(timeout=30)
    finally:
        workers.cleanup()
    with cassette.open(url, "replay") as cas:
        kept = sorted(e.step for e in cas.index.entries.values())
        for step in kept:  # each one serves its own response
            assert cas.call(request_for(0, step), live=None, step=step) == response_for(0, step)
    assert kept == list(range(len(kept)))  # a prefix: no call missing before the last kept
    # the time budget; the byte budget (time 1000 s): a part every poll that finds 4 KB
    budget = float(seconds) if seconds != "1000" else 0.0
    must = [step for step, at in done if at < killed - budget - SLACK]
    assert must and set(must) <= set(kept), (len(must), len(kept), len(done))
