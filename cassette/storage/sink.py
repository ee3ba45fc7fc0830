"""Where a cassette writes: its file (or this process's shard of a directory), and in
``record`` mode the side file that replaces it, atomically, only on a clean close.

A ``record`` run holds a :class:`~cassette.storage.locks.RecordLock` on its file from open to
close, so a second recorder of the same file is refused at open time. Side files are
created ``O_EXCL | O_NOFOLLOW`` under an unpredictable name, with the mode of the
cassette they replace (0600 for a new one)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from ..errors import CassetteError
from ..format.codec import dumps
from ..redact import Redactor
from .locks import RecordLock
from .recorder import Recorder, header_line
from .store import (
    Writer,
    is_gzip_path,
    partial_path,
    repair_tail,
    shard_name,
    stale_shards,
)
from .writer import private_mode

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
        self._record_lock: RecordLock | None = None
        run = os.environ.get("CASSETTE_RUN")
        if run and directory:  # a run's shards share one run id (record or append)
            meta.setdefault("run", run)
        if record:
            self._record_lock = RecordLock(self.target)
            if directory and path.is_dir():
                self._stale = stale_shards(path, self.target)
            self.side = partial_path(self.target)
            try:
                self.recorder()
            except BaseException:
                self._record_lock.release()
                raise

    @property
    def redacted(self) -> int:
        """How many secret values have been replaced in what was written."""
        return self._recorder.redacted if self._recorder is not None else 0

    def recorder(self) -> Recorder:
        if self._recorder is not None:
            return self._recorder
        with self._lock:
            if self._recorder is None:
                gz = is_gzip_path(self.target)
                if self.side is not None:  # this process's alone: no flock
                    mode = private_mode(self.target)
                    writer = Writer(
                        self.side, gz=gz, fsync=self._fsync, shared=False, exclusive=True, mode=mode
                    )
                    fresh = True
                else:
                    fresh = not self.target.exists() or self.target.stat().st_size == 0
                    writer = Writer(self.target, gz=gz, fsync=self._fsync)  # refuses a link
                    if not fresh:
                        repair_tail(self.target)
                self._recorder = Recorder(writer, self._redactor)
                if self.side is not None:
                    self._recorder.header(self._meta)
                elif fresh:  # several processes may be appending to a new file
                    writer.preamble = self._header()
            return self._recorder

    def _header(self) -> bytes:
        line = header_line(self._meta)
        raw = dumps(line)
        clean, count = self._redactor.redact_line(line, raw, dumps)  # as Recorder.header
        return dumps(clean) if count else raw

    def close(self) -> None:
        """Finish: the side file replaces the cassette now, atomically, unless a write to
        it failed (then the cassette is left as it was and :class:`CassetteError` says
        where the side file is)."""
        try:
            failed = None
            if self._recorder is not None:
                self._recorder.writer.close()
                failed = self._recorder.writer.failed
            if self.side is not None:
                if failed is not None:
                    raise CassetteError(
                        f"{self.target} was left untouched: a write to {self.side} failed "
                        f"({failed}); what this run recorded up to then is in {self.side} "
                        "(open it with mode='replay' to inspect), free space and record again"
                    )
                os.replace(self.side, self.target)
                for shard in self._stale:  # record starts a directory cassette from scratch
                    shard.unlink(missing_ok=True)
        finally:
            if self._record_lock is not None:
                self._record_lock.release()

    def abort(self, exc: BaseException | None) -> None:
        """Stop without replacing the cassette; ``exc`` gets a note naming the side file.
        A side file that holds nothing but its header (the run failed before its first
        call) is removed instead: there is nothing in it to inspect."""
        try:
            if self._recorder is not None:
                self._recorder.writer.close()
        finally:
            if self._record_lock is not None:
                self._record_lock.release()
        if self.side is not None and (self._recorder is None or not self._recorder.written):
            self.side.unlink(missing_ok=True)
            return
        if self.side is not None and exc is not None:
            note = (
                f"cassette: {self.target} was left untouched; what this run recorded is in "
                f"{self.side} (open it with mode='replay' to inspect)"
            )
            # BaseException.add_note is Python 3.11+; on 3.10 the same attribute it fills
            setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010
