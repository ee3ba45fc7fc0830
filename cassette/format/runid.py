"""The run id, ``meta.run_id`` of every header the recorder writes: the first 16 hex digits
of a sha256 of what the header holds (``"run:" + meta.run`` for the shards of a
``$CASSETTE_RUN``, else ``"header:"`` + the JSON ``[created_at, producer, meta.run_nonce]``),
so it survives a copy, a move or an upload. A run id passed in ``meta`` (1 to 64 letters,
digits, ``-_.:``) is kept; anything else there is no id and is never shown."""

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
    """16 random hex digits (the golden-file generators replace this to be deterministic)."""
    return secrets.token_hex(8)


def _digest(seed: bytes) -> str:
    return hashlib.sha256(seed).hexdigest()[:16]


def derive(header: dict[str, Any]) -> str:
    """The run id that ``header``'s own fields give (see the module docstring)."""
    meta = header.get("meta")
    meta = meta if isinstance(meta, dict) else {}
    run = meta.get("run")
    if isinstance(run, str) and run:
        return _digest(f"run:{run}".encode())
    fields = [header.get("created_at"), header.get("producer"), meta.get(NONCE)]
    return _digest(b"header:" + orjson.dumps(fields))


def is_run_id(value: Any) -> bool:
    """Whether ``value`` can be a run id (see the module docstring)."""
    return isinstance(value, str) and _ID.fullmatch(value) is not None


def stamp(header: dict[str, Any]) -> dict[str, Any]:
    """``header`` with ``meta.run_id`` set (and ``meta.run_nonce`` where no run is named),
    unless its meta holds a run id already."""
    meta = header["meta"]
    if is_run_id(meta.get(RUN_ID)):
        return header
    run = meta.get("run")
    if not (isinstance(run, str) and run):
        meta[NONCE] = new_nonce()
    meta[RUN_ID] = derive(header)
    return header


def run_id_of(header: dict[str, Any]) -> str | None:
    """The run id a header holds, or None (a file written before run ids)."""
    meta = header.get("meta") if isinstance(header, dict) else None
    value = meta.get(RUN_ID) if isinstance(meta, dict) else None
    return value if is_run_id(value) else None


def set_run_id(headers: list[dict[str, Any]]) -> str:
    """The run id of a cassette (one file, or the shards of a directory): the id its
    headers share; for shards of several runs, ``sha256("set:" + their sorted ids,
    comma-separated)``. Files without ids (written before them) are named as they were:
    by the ``$CASSETTE_RUN`` their headers share, else by a digest of the header lines."""
    ids = [run_id_of(h) for h in headers]
    if ids and all(ids):
        distinct = sorted({i for i in ids if i})
        return distinct[0] if len(distinct) == 1 else _digest(f"set:{','.join(distinct)}".encode())
    run = _shared_run(headers)
    if run:
        return _digest(f"run:{run}".encode())
    seed = b"\n".join(sorted(orjson.dumps(h, option=orjson.OPT_SORT_KEYS) for h in headers))
    return _digest(seed)


def _shared_run(headers: list[dict[str, Any]]) -> str | None:
    """The ``$CASSETTE_RUN`` every header names, if they all name the same one."""
    metas = [m if isinstance(m := h.get("meta"), dict) else {} for h in headers]
    runs = {str(m.get("run")) for m in metas}
    return runs.pop() if len(runs) == 1 and metas[0].get("run") else None


def kept_run_id(headers: list[dict[str, Any]]) -> dict[str, str]:
    """Header meta for a file made from cassettes whose headers are ``headers`` (a merge,
    an import): their set's run id, so a run's shards merged into one file keep its id;
    nothing if there are none (a new id is derived)."""
    return {RUN_ID: set_run_id(headers)} if headers else {}
