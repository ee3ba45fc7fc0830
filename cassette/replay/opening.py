"""Opening a cassette (a file, a shard directory, an fsspec URL): the mode ``auto``
resolves to, the index replay and append load, the sink record and append write to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CassetteModeError
from ..redact import Redactor
from ..storage.index import Index, load_index
from ..storage.remote import Listing, listing, local_or_url, materialize, remote_exists
from ..storage.remote_sink import RemoteSink
from ..storage.sink import Sink
from ..storage.store import shard_files
from .modes import Mode

__all__ = ["AnySink", "Opened", "open_parts", "where"]

AnySink = Sink | RemoteSink


@dataclass
class Opened:
    path: Path  # local: a URL read for replay is materialized here
    mode: Mode  # never AUTO
    index: Index
    sink: AnySink | None  # set in record and append mode


def where(path: str | os.PathLike[str] | None) -> tuple[str | os.PathLike[str], Path | str]:
    """(``path``, else ``$CASSETTE_PATH``; that as a local path, or an fsspec URL)."""
    path = path if path is not None else os.environ.get("CASSETTE_PATH")
    if not path:
        raise CassetteModeError(
            "no cassette path: pass one to cassette.open(), or set CASSETTE_PATH"
        )
    return path, local_or_url(path)


def _exists(path: Path, found: Listing | None) -> bool:
    if found is not None:
        return remote_exists(found)
    if path.is_dir():
        return bool(shard_files(path))
    return path.exists() and path.stat().st_size > 0


def open_parts(
    path: Path,
    url: str | None,
    given: str | os.PathLike[str],
    requested: Mode,
    redactor: Redactor,
    meta: dict[str, Any],
    fsync: bool,
) -> Opened:
    """Open the cassette at ``path`` (``url``: its fsspec URL; ``given``: as written)."""
    found = listing(url) if url is not None else None
    exists = _exists(path, found)
    mode = requested
    if mode is Mode.AUTO:
        mode = Mode.REPLAY if exists else Mode.RECORD
    if found is not None and mode is Mode.REPLAY:
        path = materialize(found)  # one listing, parallel reads
    index = _index(path, found, mode) if exists else Index()
    if mode not in (Mode.RECORD, Mode.APPEND):
        return Opened(path, mode, index, None)
    record = mode is Mode.RECORD
    if found is not None:
        sink: AnySink = RemoteSink(found, record=record, redactor=redactor, meta=meta, fsync=fsync)
        return Opened(path, mode, index, sink)
    is_dir = path.is_dir() or os.fspath(given).endswith(("/", os.sep))
    sink = Sink(path, directory=is_dir, record=record, redactor=redactor, meta=meta, fsync=fsync)
    return Opened(path, mode, index, sink)


def _index(path: Path, found: Listing | None, mode: Mode) -> Index:
    if mode is Mode.REPLAY:
        return load_index([path], lean=True)
    if mode is not Mode.APPEND:
        return Index()
    index = load_index([materialize(found) if found is not None else path], lean=True)
    if index.eval_protocol:
        raise CassetteModeError(
            f"{path} is an eval-protocol playback file, which is read-only; "
            "convert it with `cassette convert --from ep` and append to the result"
        )
    return index
