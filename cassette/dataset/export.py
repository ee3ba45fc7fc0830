"""A cassette as a Parquet dataset (interactions, episodes, a dataset card) and back again;
pyarrow is the ``export`` extra."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import CassetteError, reporting_paths
from ..format.runid import RUN_ID, kept_run_id, set_run_id
from ..redact import Redactor
from ..replay.matching import Matcher
from ..storage.gc import paused_gc
from ..storage.index import load_index
from ..storage.recorder import Recorder
from ..storage.store import replacing
from .export_table import EPISODES, Rows, interaction_rows, json_bytes, make_table
from .import_rows import ImportedCall, checked_calls, checked_headers, checked_outcomes

__all__ = ["Exported", "export_parquet", "import_parquet"]

INSTALL_HINT = "pip install 'rollout-cassette[export]'"
_HEADERS_KEY = b"cassette.headers"


@dataclass
class Exported:
    interactions: int
    episodes: int
    run_id: str
    bytes: int


def _pyarrow() -> Any:
    try:
        import pyarrow  # type: ignore[import-untyped, import-not-found, unused-ignore]
        import pyarrow.parquet  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise CassetteError(f"Parquet export and import need pyarrow: {INSTALL_HINT}") from None
    return pyarrow


@reporting_paths
def export_parquet(src: Path, out: Path) -> Exported:
    """Write ``src`` (a cassette file or shard directory) to the directory ``out``."""
    with paused_gc():  # millions of live objects: the collector's passes cost the most
        try:
            return _export(src, out)
        except orjson.JSONEncodeError as exc:
            raise CassetteError(
                f"{src} holds a value JSON cannot write ({exc}: a damaged line); run "
                f"`cassette validate {src}`"
            ) from None
        except OverflowError as exc:  # (a step beyond 2^63 - 1: Parquet's int64 column)
            raise CassetteError(
                f"{src} holds a number too large for the dataset's columns ({exc}: a step "
                f"beyond 2^63 - 1, a damaged line?); run `cassette validate {src}`"
            ) from None


def _rows(src: Path) -> Rows:
    index = load_index([src], lean=True)
    if index.eval_protocol:
        raise CassetteError(
            f"{src} is an eval-protocol playback file; convert it first with "
            "`cassette convert --from ep`"
        )
    return interaction_rows(index)


def _export(src: Path, out: Path) -> Exported:
    pa = _pyarrow()
    rows = _rows(src)
    headers, steps = rows.headers, rows.steps
    run_id = set_run_id(headers)
    episodes: dict[str, list[Any]] = {k: [] for k in EPISODES}
    for env in rows.episodes():
        found = rows.outcomes.get(env)
        outcome = found or {}
        for key, value in (
            ("env_index", str(env).encode()),
            ("env_index_json", json_bytes(env)),
            ("reward", outcome.get("reward")),
            ("terminated", outcome.get("terminated")),
            ("info", json_bytes(outcome.get("info"))),
            ("steps", steps.get(env, 0)),
            ("has_outcome", found is not None),
            ("run_id", run_id.encode()),
        ):
            episodes[key].append(value)
    meta = {_HEADERS_KEY: orjson.dumps(headers)}
    out.mkdir(parents=True, exist_ok=True)
    calls = len(rows)
    interactions = rows.table(pa, meta)
    del rows  # (the table holds the buffers)
    write = {"compression": "zstd", "write_page_checksum": True}  # (import verifies them)
    pa.parquet.write_table(interactions, out / "interactions.parquet", **write)
    del interactions
    table = make_table(pa, EPISODES, episodes, meta)
    pa.parquet.write_table(table, out / "episodes.parquet", **write)
    (out / "README.md").write_text(_card(src, headers, run_id, calls, len(episodes["steps"])))
    size = sum((out / n).stat().st_size for n in ("interactions.parquet", "episodes.parquet"))
    return Exported(calls, len(episodes["env_index"]), run_id, size)


_CARD = """---
configs:
- config_name: interactions
  data_files: interactions.parquet
  default: true
- config_name: episodes
  data_files: episodes.parquet
tags:
- rollout-cassette
- agent-trajectories
---

# Rollout cassette `{name}`

- run id: `{run_id}`
- {calls} recorded calls in {episodes} episodes
- recorded {first} to {last} by {producers}
- run meta: `{meta}`

Two tables: `interactions` (one row per call; `request`, `response`, `stream_chunks`,
`error`, `usage` and `meta` are JSON text) and `episodes` (reward, terminated, info,
steps, run id). Load with `datasets.load_dataset(<dir>, 'interactions')`, pandas
`read_parquet` or duckdb; `cassette import <dir> run.jsonl` turns it back into a
cassette that replays offline.
"""


def _card(src: Path, headers: list[dict[str, Any]], run_id: str, calls: int, episodes: int) -> str:
    metas = [h.get("meta", {}) for h in headers]
    created = sorted(str(h.get("created_at")) for h in headers) or ["?"]
    producers = ", ".join(sorted({str(h.get("producer")) for h in headers}) or ["unknown"])
    meta = orjson.dumps(metas[0] if len(metas) == 1 else metas).decode()
    run = {"name": src.name, "run_id": run_id, "calls": calls, "episodes": episodes}
    return _CARD.format(**run, first=created[0], last=created[-1], producers=producers, meta=meta)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())  # (Arrow's messages may span lines)


@reporting_paths
def import_parquet(src: Path, out: Path) -> Exported:
    """Write the export in directory ``src`` as the cassette file ``out`` (atomically); rows
    a cassette cannot hold are refused."""
    pa = _pyarrow()
    try:
        read = {"page_checksum_verification": True}
        inter = pa.parquet.read_table(src / "interactions.parquet", **read)
        eps = pa.parquet.read_table(src / "episodes.parquet", **read)
    except (OSError, pa.ArrowException) as exc:
        raise CassetteError(
            f"{src} is not a `cassette export` directory ({_one_line(exc)}); name the "
            "directory that holds interactions.parquet and episodes.parquet"
        ) from None
    try:
        headers = checked_headers(inter.schema.metadata, _HEADERS_KEY, src)
        calls = list(checked_calls(pa, inter, src))
        outcomes = list(checked_outcomes(pa, eps, src))
    except (UnicodeDecodeError, pa.ArrowException) as exc:  # bytes damaged on disk
        raise CassetteError(
            f"{src} holds a damaged table ({_one_line(exc)}); export the cassette again with "
            "`cassette export`"
        ) from None
    run_id = set_run_id(headers)
    with replacing(out) as writer:
        recorder = Recorder(writer, Redactor())
        _header(recorder, headers, run_id)
        _calls(recorder, calls, src)
        for o in outcomes:
            recorder.outcome({"type": "outcome", "env_index": o.env_index, "reward": o.reward,
                              "terminated": o.terminated, "info": o.info})  # fmt: skip
    return Exported(len(calls), eps.num_rows, run_id, out.stat().st_size)


def _header(recorder: Recorder, headers: list[Any], run_id: str) -> None:
    if len(headers) == 1:  # the run's own header: its run id stays recomputable
        head = {**headers[0], "meta": {**headers[0]["meta"], RUN_ID: run_id}}
        recorder.writer.write(orjson.dumps(recorder.redactor.redact(head)[0]))
    else:  # the shards of a run, or none: their set's id
        recorder.header(kept_run_id(headers))


def _calls(recorder: Recorder, calls: list[ImportedCall], src: Path) -> None:
    matcher = Matcher()
    for c in calls:
        sha = c.sha or matcher.digest(c.request)
        try:
            recorder.interaction(c.env_index, c.channel, c.step, c.request, sha, c.response,
                                 c.error, c.meta)  # fmt: skip
        except CassetteError:
            raise CassetteError(
                f"{src}: the call (env_index={c.env_index!r}, channel={c.channel!r}, "
                f"step={c.step}) holds a value a cassette cannot store (JSON nested "
                "deeper than 254 levels, say); fix that row of interactions.parquet"
            ) from None
