"""Where a cassette writes: its file (or this process's shard of a directory), and in
``record`` mode the side file that replaces it, atomically, only on a clean close."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from .recorder import Recorder
from .redact import Redactor
from .store import (
    Writer,
    is_gzip_path,
    partial_path,
    repair_tail,
    shard_name,
    stale_shards,
)

__all__ = ["Sink"]


class Sink:
    """The write side of one open cassette (``record`` and ``append`` modes).

    ``target`` is the file the recording belongs in; ``side`` (record mode only) is where
    it is written until :meth:`close` renames it over ``target``. The recorder opens on
    first use (at once in record mode, so that a run that records nothing still replaces
    the cassette with an empty one).
    """

    def __init__(
        self,
        path: Path,
        *,
        directory: bool,
        record: bool,
        redactor: Redactor,
        meta: dict[str, Any],
        fsync: bool,
    ) -> None:
        self.target = path / shard_name() if directory else path
        self.side: Path | None = None
        self._stale: list[Path] = []
        self._redactor = redactor
        self._meta = meta
        self._fsync = fsync
        self._recorder: Recorder | None = None
        self._lock = threading.Lock()
        if record:
            if directory and path.is_dir():
                self._stale = stale_shards(path, self.target)
            self.side = partial_path(self.target)
            run = os.environ.get("CASSETTE_RUN")
            if run and directory:
                meta.setdefault("run", run)
            self.recorder()

    @property
    def redacted(self) -> int:
        """How many secret values have been replaced in what was written."""
        return self._recorder.redacted if self._recorder is not None else 0

    def recorder(self) -> Recorder:
        if self._recorder is not None:
            return self._recorder
        with self._lock:
            if self._recorder is None:
                path = self.side or self.target
                fresh = not path.exists() or path.stat().st_size == 0
                if not fresh:
                    repair_tail(path)
                # a side file is named by pid: no other process writes it, so no flock
                writer = Writer(
                    path, gz=is_gzip_path(self.target), fsync=self._fsync, shared=not self.side
                )
                self._recorder = Recorder(writer, self._redactor)
                if fresh:
                    self._recorder.header(self._meta)
            return self._recorder

    def close(self) -> None:
        """Finish: the side file replaces the cassette now, atomically."""
        if self._recorder is not None:
            self._recorder.writer.close()
        if self.side is not None:
            os.replace(self.side, self.target)
            for shard in self._stale:  # record starts a directory cassette from scratch
                shard.unlink(missing_ok=True)

    def abort(self, exc: BaseException | None) -> None:
        """Stop without replacing the cassette; ``exc`` gets a note naming the side file."""
        if self._recorder is not None:
            self._recorder.writer.close()
        if self.side is not None and exc is not None:
            note = (
                f"cassette: {self.target} was left untouched; what this run recorded is in "
                f"{self.side} (open it with mode='replay' to inspect)"
            )
            # BaseException.add_note is Python 3.11+; on 3.10 the same attribute it fills
            setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010
