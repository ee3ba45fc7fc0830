"""Rollout-scale benchmarks: a shard set on a local S3 server against local disk, and the
Parquet export of a 100k-interaction cassette.

    python bench/bench_scale.py                # 100 shards x 1,000 interactions (minutes)
    python bench/bench_scale.py --quick        # 20 shards x 200 interactions (smoke run)
    python bench/bench_scale.py --only export  # (c) alone: the set recorded on disk only

(a) record: 100 shards x 1,000 interactions (100 episodes of 10 growing chat turns per
    shard), each shard recorded by its own ``cassette.open`` in record mode with
    ``CASSETTE_SHARD``/``CASSETTE_RUN`` set, as 100 workers of one run would; once into a
    local directory, once into ``s3://`` on moto's S3 server (``ThreadedMotoServer`` on
    127.0.0.1, started and stopped here). Reported: calls/s and the ratio S3 / disk.
(b) replay: the whole set opened once in replay mode (S3: one listing, parallel reads)
    and every call served, strict matching. Reported as (a).
(c) export: the local set (100k interactions) to Parquet with ``cassette.dataset.export``;
    MB/s of JSONL read, and the Parquet size against the JSONL and a ``.jsonl.gz`` of
    the same lines (gzip level 6).

moto is an in-process Python S3 server: its latency is not a cloud store's, so the S3
rows measure the cassette's own overhead (requests made, bytes moved), not S3's.
"""

from __future__ import annotations

import argparse
import gzip
import logging
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cassette
from cassette.dataset.export import export_parquet

SYSTEM = {"role": "system", "content": "You are a terse assistant. " * 8}


def request_for(env: int, step: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [SYSTEM, {"role": "user", "content": f"task {env}: go"}]
    for k in range(step):
        messages.append({"role": "assistant", "content": f"answer {k} of task {env} " * 4})
        messages.append({"role": "user", "content": f"tool result {k} for task {env} " * 4})
    return {"model": "bench-model", "temperature": 0.0, "messages": messages}


def response_for(env: int, step: int) -> dict[str, Any]:
    return {
        "id": f"r-{env}-{step}",
        "object": "chat.completion",
        "model": "bench-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": f"answer {step} of task {env} " * 4},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 50 + step, "completion_tokens": 12, "total_tokens": 62 + step},
    }


def record_set(where: str, shards: int, per_shard: int, steps: int = 10) -> float:
    os.environ["CASSETTE_RUN"] = "bench"
    started = time.perf_counter()
    for shard in range(shards):
        os.environ["CASSETTE_SHARD"] = f"w{shard:04d}"
        with cassette.open(where, "record") as cas:
            for e in range(per_shard // steps):
                env = shard * 10_000 + e
                for step in range(steps):
                    resp = response_for(env, step)
                    cas.call(request_for(env, step), live=lambda r=resp: r, env_index=env)
    return time.perf_counter() - started


def replay_set(where: str, shards: int, per_shard: int, steps: int = 10) -> float:
    started = time.perf_counter()
    with cassette.open(where, "replay") as cas:
        for shard in range(shards):
            for e in range(per_shard // steps):
                env = shard * 10_000 + e
                for step in range(steps):
                    cas.call(request_for(env, step), live=None, env_index=env)  # type: ignore[arg-type]
    return time.perf_counter() - started


def export_rows(local: str, out: Path) -> list[tuple[str, str, str, str]]:
    """(c): export the local set, timed; its size against the JSONL and its gzip."""
    files = sorted(Path(local).glob("*.jsonl"))
    raw = b"".join(f.read_bytes() for f in files)
    gz = len(gzip.compress(raw, compresslevel=6))
    import pyarrow.parquet  # noqa: F401  (imported before the clock starts)

    started = time.perf_counter()
    done = export_parquet(Path(local), out)
    took = time.perf_counter() - started
    return [
        (
            f"export {done.interactions:,} interactions to Parquet",
            f"{len(raw) / took / 1e6:,.1f} MB/s",
            f"{took:.1f} s",
            "",
        ),
        (
            "size: Parquet (zstd) / JSONL / .jsonl.gz",
            f"{done.bytes / 1e6:,.1f} MB",
            f"{len(raw) / 1e6:,.1f} MB / {gz / 1e6:,.1f} MB",
            f"{done.bytes / len(raw):.2f}x JSONL, {done.bytes / gz:.2f}x gz",
        ),
    ]


def print_rows(rows: list[tuple[str, str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'S3 (moto) / this':>18}  {'local disk':>22}  ratio")
    for name, a, b, c in rows:
        print(f"{name:<{width}}  {a:>18}  {b:>22}  {c}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only", choices=["export"], help="run one part: export (no S3 server needed)"
    )
    args = parser.parse_args()
    shards, per = (20, 200) if args.quick else (100, 1000)
    calls = shards * per
    if args.only == "export":
        with tempfile.TemporaryDirectory() as tmp:
            record_set(f"{tmp}/set/", shards, per)
            print_rows(export_rows(f"{tmp}/set/", Path(tmp) / "ds"))
        return
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ENDPOINT_URL=f"http://{host}:{port}",
        AWS_ACCESS_KEY_ID="bench",
        AWS_SECRET_ACCESS_KEY="bench",
        AWS_DEFAULT_REGION="us-east-1",
    )
    import fsspec

    fsspec.filesystem("s3").mkdir("bench")
    rows: list[tuple[str, str, str, str]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            local = f"{tmp}/set/"
            url = "s3://bench/set/"
            rec_disk = record_set(local, shards, per)
            rec_s3 = record_set(url, shards, per)
            rows.append(
                (
                    f"record {shards} shards x {per} calls",
                    f"{calls / rec_s3:,.0f} calls/s",
                    f"{calls / rec_disk:,.0f} calls/s",
                    f"{rec_s3 / rec_disk:.2f}x time",
                )
            )
            rep_disk = replay_set(local, shards, per)
            rep_s3 = replay_set(url, shards, per)
            rows.append(
                (
                    f"replay the set ({calls:,} calls)",
                    f"{calls / rep_s3:,.0f} calls/s",
                    f"{calls / rep_disk:,.0f} calls/s",
                    f"{rep_s3 / rep_disk:.2f}x time",
                )
            )
            rows += export_rows(local, Path(tmp) / "ds")
    finally:
        server.stop()
    print_rows(rows)


if __name__ == "__main__":
    main()
