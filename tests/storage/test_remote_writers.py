"""Object storage writers. Two cassettes open at once on one URL in one process share the
default shard name, and each uploads the whole shard on close, so the second would
replace the first one's calls: the second is refused at open. Record mode with
``$CASSETTE_RUN`` set reads the header of every shard already there: a shard whose header
meta is not an object, or whose gzip bytes are damaged, is one to replace, not a crash
(on S3 and on local disk). An append that makes no call uploads nothing."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest

import cassette
from cassette.dataset.validate import Report, validate
from cassette.errors import CassetteModeError
from tests.helpers.procs import Workers
from tests.helpers.s3server import S3, s3_server
from tests.helpers.worker import request_for, response_for

ODD_HEADS = {
    "meta-str.jsonl": b'{"type":"header","meta":"x"}\n',
    "meta-list.jsonl": b'{"type":"header","meta":[1]}\n',
    "meta-null.jsonl": b'{"type":"header","meta":null}\n',
    "not-gzip.jsonl.gz": b"\x1f\x8b" + b"\x00" * 40,
    "cut.jsonl.gz": gzip.compress(b'{"type":"header","meta":{"run":"r"}}\n' * 50)[:30],
}


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    with s3_server() as server:
        yield server


def _offline() -> dict[str, object]:
    raise AssertionError("replay made a live call")


def validate_url(url: str) -> Report:
    from cassette.storage.remote import listing, materialize

    return validate(materialize(listing(url)))


def _calls(url: str) -> int:
    with cassette.open(url, "replay") as cas:
        return len(cas.index.entries)


def test_record_with_a_run_replaces_shards_with_odd_headers_on_s3(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fsspec

    fs = fsspec.filesystem("s3")
    for name, data in ODD_HEADS.items():
        fs.pipe_file(f"{s3.bucket}/odd/{name}", data)
    monkeypatch.setenv("CASSETTE_RUN", "r")
    monkeypatch.setenv("CASSETTE_SHARD", "w1")
    with cassette.open(s3.url("odd/"), "record") as cas:
        cas.call({"q": 1}, live=lambda: {"a": 1})
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.find(f"{s3.bucket}/odd")) == ["w1.jsonl"]
    assert _calls(s3.url("odd/")) == 1


def test_record_with_a_run_replaces_shards_with_odd_headers_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, data in ODD_HEADS.items():
        if not name.endswith(".gz"):  # (a damaged local gzip shard is refused by its reader)
            (tmp_path / name).write_bytes(data)
    monkeypatch.setenv("CASSETTE_RUN", "r")
    monkeypatch.setenv("CASSETTE_SHARD", "w1")
    with cassette.open(tmp_path, "record") as cas:
        cas.call({"q": 1}, live=lambda: {"a": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w1.jsonl"]


@pytest.mark.parametrize("name", ["empty-a.jsonl", "empty-b.jsonl.gz", "empty-c/"])
def test_append_that_makes_no_call_closes_and_writes_nothing(s3: S3, name: str) -> None:
    import fsspec

    url = s3.url(name)
    with cassette.open(url, "append"):
        pass  # (before: FileNotFoundError of the spool file on close)
    assert not fsspec.filesystem("s3").exists(url.rstrip("/"))
    with cassette.open(url, "append") as cas:  # and the next one records as usual
        cas.call({"q": 1}, live=lambda: {"a": 1})
    assert _calls(url) == 1


@pytest.mark.parametrize("mode", ["append", "record"])
def test_a_second_writer_of_one_shard_in_a_process_is_refused(s3: S3, mode: str) -> None:
    url = s3.url(f"two-{mode}/")
    first = cassette.open(url, mode)
    first.call({"q": "a"}, live=lambda: {"a": 1})
    with pytest.raises(CassetteModeError, match="already has a cassette open for writing"):
        cassette.open(url, mode)
    first.call({"q": "b"}, live=lambda: {"b": 1}, env_index=1)
    first.close()
    with cassette.open(url, "append") as again:  # closed: the shard is free again
        again.call({"q": "c"}, live=lambda: {"c": 1}, env_index=2)
    assert _calls(url) == 3  # none lost
    one = s3.url(f"one-{mode}.jsonl.gz")  # a single object as well
    with cassette.open(one, mode), pytest.raises(CassetteModeError):
        cassette.open(one, mode)


class _Stop(Exception):
    pass


def _record_then_fail(url: str, steps: list[int]) -> None:
    with cassette.open(url, "record") as cas:
        for step in steps:
            cas.call(request_for(0, step), live=lambda s=step: response_for(0, s), step=step)
        raise _Stop


def test_a_worker_interrupted_again_and_again_keeps_its_calls_in_order(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker of a run that dies (here: an exception, which leaves its parts as a kill
    does) and opens its shard again continues it in a new session, three times; then
    another worker of the run records and closes. Its sessions' parts are read in the
    order they were written whatever their random names (here: each later than the one
    before sorts first), so the first line is the header that names the run: the other
    worker keeps the shard instead of deleting it as a stale one, and it validates."""
    import cassette.storage.remote_sink as remote_sink

    names = iter(f"{c}" * 12 for c in "fedcba987654")  # each sorts before the one before

    class Secrets:  # (the module's secrets, as seen by remote_sink alone)
        token_hex = staticmethod(lambda n: next(names))

    monkeypatch.setattr(remote_sink, "secrets", Secrets)
    monkeypatch.setenv("CASSETTE_RUN", "run-1")
    monkeypatch.setenv("CASSETTE_SHARD", "w1")
    url = s3.url("again/")
    for session in range(3):
        with pytest.raises(_Stop):
            _record_then_fail(url, [2 * session, 2 * session + 1])
    monkeypatch.setenv("CASSETTE_SHARD", "w2")
    with cassette.open(url, "record") as cas:
        cas.call(request_for(1, 0), live=lambda: response_for(1, 0), env_index=1)
    with cassette.open(url, "replay") as cas:
        for step in range(6):
            assert cas.call(request_for(0, step), live=_offline, step=step) == response_for(0, step)
    assert validate_url(url).ok


def test_workers_of_a_run_with_a_header_past_64_kib_keep_each_other(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record run reads the first 64 KiB of each shard for its header; a header longer
    than that (a large ``meta``) is read whole, so the shard of another worker of the run
    is kept, not deleted as a stale one (before: w1's calls were deleted by w2's close)."""
    monkeypatch.setenv("CASSETTE_RUN", "run-big")
    url = s3.url("big-header/")
    for env, worker in enumerate(("w1", "w2")):
        monkeypatch.setenv("CASSETTE_SHARD", worker)
        with cassette.open(url, "record", meta={"config": "x" * 70_000}) as cas:
            cas.call({"q": worker}, live=lambda w=worker: {"a": w}, env_index=env)
    assert _calls(url) == 2


def test_two_processes_sharing_a_shard_name_both_keep_their_calls(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two worker processes append into one S3 directory under the same CASSETTE_SHARD
    (unsupported, but a copied job config does it). The second to close finds the shard
    object written by the first since it listed it, and uploads its own shard under a
    name of its session instead of replacing it (before: the first one's calls were
    lost)."""
    monkeypatch.setenv("CASSETTE_SHARD", "same")
    url = s3.url("shared-name/")
    workers = Workers()
    try:
        procs = []
        for env in (0, 1):
            go = tmp_path / f"go{env}"
            proc = workers.start(url, "append", "--envs", str(env), "--steps", "4",
                                 "--pause-after", "2", "--go", str(go))  # fmt: skip
            assert workers.read_line(proc).startswith("READY 2")
            procs.append((proc, go))
        for proc, go in procs:  # the first closes, then the second
            go.touch()
            out, err = workers.finish(proc)
            assert proc.returncode == 0 and "LIVE 4" in out, err
    finally:
        workers.cleanup()
    with cassette.open(url, "replay") as cas:
        for env in (0, 1):
            for step in range(4):
                got = cas.call(request_for(env, step), live=_offline, env_index=env, step=step)
                assert got == response_for(env, step)
