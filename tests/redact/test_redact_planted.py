"""The planted set (every sample of tests/helpers/fake_secrets.py in every place a line
can hold text) never reaches a file in any storage form: a plain file, a ``.gz``, a
shard directory, the parts of a cassette on S3 (moto's server on 127.0.0.1) and a
Parquet export; and each recording still replays, offline."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path
from typing import Any

import pytest

import cassette
from tests.helpers.fake_secrets import LOCATIONS, SAMPLES, plant
from tests.helpers.s3server import S3

SECRETS = [(sample.kind, s) for sample in SAMPLES for s in sample.secrets]


def leaked(data: bytes) -> list[tuple[str, str]]:
    return [(kind, s) for kind, s in SECRETS if s.encode() in data]


def record(url: str, where: str) -> None:
    """Every sample planted at ``where``, one episode each."""
    meta = {"notes": [s.text for s in SAMPLES]} if where == "header meta" else None
    with cassette.open(url, "record", meta=meta) as cas:
        for env, sample in enumerate(SAMPLES):
            plant(cas, env, where, sample.text)


def replay(url: str, where: str) -> None:
    """Every planted call served from the recording, with no socket allowed."""
    with cassette.open(url, "replay") as cas, pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", _refuse)
        for env, sample in enumerate(SAMPLES):
            plant(cas, env, where, sample.text)  # a miss or mismatch would raise
        assert cas.mode is cassette.Mode.REPLAY


def _refuse(self: socket.socket, *args: Any) -> None:
    raise AssertionError(f"replay tried to connect to {args}")


def _read(path: Path) -> bytes:
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    raw = [f.read_bytes() for f in files]
    return b"\n".join(
        gzip.decompress(r) if f.name.endswith(".gz") else r for f, r in zip(files, raw, strict=True)
    )


@pytest.mark.parametrize("name", ["a.jsonl", "a.jsonl.gz", "shards/"])
def test_no_planted_secret_reaches_a_local_file_and_each_replays(tmp_path: Path, name: str) -> None:
    for where in LOCATIONS:
        path = tmp_path / where.replace(" ", "_") / name
        path.parent.mkdir()
        record(str(path), where)
        assert leaked(_read(path)) == [], where
        replay(str(path), where)


@pytest.mark.parametrize("key", ["dir/", "one/a.jsonl", "one/a.jsonl.gz"])
def test_no_planted_secret_reaches_s3(s3: S3, key: str) -> None:
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    for where in ("user message", "stream chunks (split)", "tool result", "header meta"):
        url = s3.url(f"{where.replace(' ', '_')}/{key}")
        record(url, where)
        parts = fs.find(url.removeprefix("s3://").rstrip("/"))
        assert parts, url
        for part in parts:
            raw = fs.cat_file(part)
            assert leaked(gzip.decompress(raw) if part.endswith(".gz") else raw) == [], part
        replay(url, where)


def test_no_planted_secret_reaches_a_parquet_export(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from cassette.dataset.export import export_parquet

    for where in ("response content", "stream chunks (split)", "outcome info", "dict key"):
        src = tmp_path / f"{where.replace(' ', '_')}.jsonl"
        record(str(src), where)
        out = tmp_path / f"{src.stem}-export"
        export_parquet(src, out)
        for table in sorted(out.glob("*.parquet")):
            read = pq.read_table(table)
            dumped = json.dumps([read.to_pylist(), str(read.schema.metadata)], default=str)
            assert leaked(dumped.encode()) == [], (where, table.name)
        assert leaked((out / "README.md").read_bytes()) == []
