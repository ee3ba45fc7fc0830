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
from cassette.errors import CassetteModeError
from tests.helpers.s3server import S3, s3_server

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
