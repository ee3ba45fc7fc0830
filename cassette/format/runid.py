"""The run id, ``meta.run_id`` of every header: 16 hex digits of a sha256 of what the
header holds, so it survives a copy or an upload (docs/reference/file-format.md). One
passed in ``meta`` (1 to 64 of ``A-Za-z0-9-_.:``) is kept; anything else is no id."""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any

import orjson

__all__ = [
    "NONCE",
    "RUN_ID",
    "derive",
    "is_run_id",
    "kept_run_id",
    "new_nonce",
    "run_id_of",
    "set_run_id",
    "stamp",
]

RUN_ID = "run_id"  # the key of the id in a header's meta
_ID = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
NONCE = "run_nonce"  # the random part of a header that names no run


def new_nonce() -> str:
    """16 random hex digits (golden-file generators replace this)."""
    return secrets.token_hex(8)


def _digest(seed: bytes) -> str:
    return hashlib.sha256(seed).hexdigest()[:16]


def _meta(header: Any) -> dict[str, Any]:
    meta = header.get("meta") if isinstance(header, dict) else None
    return meta if isinstance(meta, dict) else {}


def _run(meta: dict[str, Any]) -> str | None:
    run = meta.get("run")
    return run if isinstance(run, str) and run else None


def derive(header: dict[str, Any]) -> str:
    """The run id that ``header``'s own fields give (see the module docstring)."""
    meta = _meta(header)
    if run := _run(meta):
        return _digest(f"run:{run}".encode())
    fields = [header.get("created_at"), header.get("producer"), meta.get(NONCE)]
    return _digest(b"header:" + orjson.dumps(fields))


def is_run_id(value: Any) -> bool:
    """Whether ``value`` can be a run id (see the module docstring)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def stamp(header: dict[str, Any]) -> dict[str, Any]:
    """``header`` with ``meta.run_id`` (and ``run_nonce`` if no run is named) set if unset."""
    meta = header["meta"]
    if not is_run_id(meta.get(RUN_ID)):
        if _run(meta) is None:
            meta[NONCE] = new_nonce()
        meta[RUN_ID] = derive(header)
    return header


def run_id_of(header: dict[str, Any]) -> str | None:
    """The run id a header holds, or None (a file written before run ids)."""
    value = _meta(header).get(RUN_ID)
    return value if is_run_id(value) else None


def set_run_id(headers: list[dict[str, Any]]) -> str:
    """The run id of a cassette: the id its headers share, or for several runs
    ``sha256("set:" + their sorted ids, comma-separated)``."""
    ids = {run_id_of(h) for h in headers}
    if not ids or None in ids:
        return _id_before_ids(headers)
    distinct = sorted(str(i) for i in ids)
    return distinct[0] if len(distinct) == 1 else _digest(f"set:{','.join(distinct)}".encode())


def _id_before_ids(headers: list[dict[str, Any]]) -> str:
    """Files written before run ids: the ``$CASSETTE_RUN`` all name, or the headers' digest."""
    runs = {str(_meta(h).get("run")) for h in headers}
    if len(runs) == 1 and _meta(headers[0]).get("run"):  # the run all shards name
        return _digest(f"run:{runs.pop()}".encode())
    return _digest(
        b"\n".join(sorted(orjson.dumps(h, option=orjson.OPT_SORT_KEYS) for h in headers))
    )


def kept_run_id(headers: list[dict[str, Any]]) -> dict[str, str]:
    """Header meta for a file made from cassettes with ``headers``: their set's run id."""
    return {RUN_ID: set_run_id(headers)} if headers else {}
