"""Where an opened cassette lives and what opening it takes: whether it exists (a file,
a shard directory, an fsspec URL), the mode ``auto`` resolves to, the index replay and
append load, and the sink record and append write to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CassetteModeError
from ..redact import Redactor
from ..storage.index import Index, load_index
from ..storage.remote import listing, materialize, remote_exists
from ..storage.remote_sink import RemoteSink
from ..storage.sink import Sink
from ..storage.store import shard_files
from .modes import Mode

__all__ = ["Opened", "open_parts"]


@dataclass
class Opened:
    path: Path  # local: a URL read for replay is materialized here
    mode: Mode  # never AUTO
    index: Index
    sink: Sink | RemoteSink | None  # set in record and append mode


def open_parts(
    path: Path,
    url: str | None,
    given: str | os.PathLike[str],
    requested: Mode,
    redactor: Redactor,
    meta: dict[str, Any],
    fsync: bool,
) -> Opened:
    """Open the cassette at ``path`` (``url``, if it is an fsspec URL; ``given``: the path
    as the caller wrote it, a trailing separator names a directory) in ``requested`` mode."""
    found = listing(url) if url is not None else None
    is_dir = path.is_dir() or os.fspath(given).endswith(("/", os.sep))
    if found is not None:
        is_dir, exists = found.directory, remote_exists(found)
    elif path.is_dir():
        exists = bool(shard_files(path))
    else:
        exists = path.exists() and path.stat().st_size > 0
    mode_ = requested
    if mode_ is Mode.AUTO:
        mode_ = Mode.REPLAY if exists else Mode.RECORD
    if found is not None and mode_ is Mode.REPLAY:  # one listing, parallel reads
        path = materialize(found)
    index = load_index([path], lean=True) if exists and mode_ is Mode.REPLAY else Index()
    if exists and mode_ is Mode.APPEND:
        local = materialize(found) if found is not None else path
        index = load_index([local], lean=True)
    if mode_ is Mode.APPEND and index.eval_protocol:
        raise CassetteModeError(
            f"{path} is an eval-protocol playback file, which is read-only; "
            "convert it with `cassette convert --from ep` and append to the result"
        )
    sink: Sink | RemoteSink | None = None
    if found is not None and mode_ in (Mode.RECORD, Mode.APPEND):
        sink = RemoteSink(
            found,
            record=mode_ is Mode.RECORD,
            redactor=redactor,
            meta=meta,
            fsync=fsync,
        )
    elif mode_ in (Mode.RECORD, Mode.APPEND):
        sink = Sink(
            path,
            directory=is_dir,
            record=mode_ is Mode.RECORD,
            redactor=redactor,
            meta=meta,
            fsync=fsync,
        )
    return Opened(path, mode_, index, sink)
