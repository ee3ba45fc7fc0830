"""Where a cassette writes: its file (or this process's shard of a directory), and in
``record`` mode the side file that replaces it, atomically, only on a clean close.

A ``record`` run holds a :class:`~cassette.storage.locks.RecordLock` on its file from open to
close, so a second recorder of the same file is refused at open time. Side files are
created ``O_EXCL | O_NOFOLLOW`` under an unpredictable name, with the mode of the
cassette they replace (0600 for a new one). A ``.gz`` cassette is written whole: in
``record`` mode its side file holds plain lines, compressed when it replaces the
cassette; ``append`` to one is refused at open (a shard directory is the fix)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from ..errors import CassetteError, CassetteModeError
from ..format.codec import dumps
from ..redact import Redactor
from .locks import RecordLock
from .recorder import Recorder, header_line
from .store import (
    Writer,
    continues_run,
    partial_path,
    publish,
    repair_tail,
    shard_name,
    stale_shards,
    written_whole,
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
        if record and directory and continues_run(self.target):
            record = False  # a worker of this run opening its shard again: it goes on
        if not record and written_whole(self.target):
            raise CassetteModeError(_no_append(self.target))
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
        if self._recorder is None:
            with self._lock:
                if self._recorder is None:
                    self._recorder = self._open()
        return self._recorder

    def _open(self) -> Recorder:
        if self.side is not None:  # this process's alone: no flock
            mode = private_mode(self.target)
            writer = Writer(self.side, fsync=self._fsync, shared=False, exclusive=True, mode=mode)
            recorder = Recorder(writer, self._redactor)
            recorder.header(self._meta)
            return recorder
        writer = Writer(self.target, fsync=self._fsync)  # refuses a link
        if repair_tail(self.target) or self.target.stat().st_size:
            return Recorder(writer, self._redactor)
        writer.preamble = self._header()  # several processes may be appending to a new file
        return Recorder(writer, self._redactor)

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
            if self._recorder is not None:
                self._recorder.writer.close()
            if self.side is not None:
                self._publish(self.side)
        finally:
            if self._record_lock is not None:
                self._record_lock.release()

    def _publish(self, side: Path) -> None:
        failed = self._recorder.writer.failed if self._recorder is not None else None
        try:
            if failed is None:
                publish(side, self.target)
                for shard in self._stale:  # record starts a directory cassette from scratch
                    shard.unlink(missing_ok=True)
                return
        except OSError as exc:
            failed = f"compressing it: {exc.strerror or exc}"
        raise CassetteError(
            f"{self.target} was left untouched: a write to {side} failed ({failed}); what "
            f"this run recorded up to then is in {side} (open it with mode='replay' to "
            "inspect), free space and record again"
        )

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
        if self.side is None:  # append: every line written is in the cassette itself
            return
        if not self.recorder().written:  # (record mode opened its recorder at once)
            self.side.unlink(missing_ok=True)
            return
        if exc is not None:
            note = (
                f"cassette: {self.target} was left untouched; what this run recorded is in "
                f"{self.side} (open it with mode='replay' to inspect)"
            )
            # BaseException.add_note is Python 3.11+; on 3.10 the same attribute it fills
            setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010


def _no_append(target: Path) -> str:
    """The refusal of ``append`` on a ``.gz`` cassette, with the shard directory to use."""
    stem = target.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".ndjson")
    shards = target.with_name(stem or "shards")
    move = f"`mkdir {shards} && mv {target} {shards}/`, then " if target.exists() else ""
    return (
        f"cannot append to {target}: a .gz cassette is written whole (mode='record'), never "
        f"appended to; to append, from one process or several, use a shard directory: "
        f"{move}open {shards}/ with mode='append'"
    )
