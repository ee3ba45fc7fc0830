"""Where a cassette writes: its file (or this process's shard), and in ``record`` mode a
locked side file that replaces it atomically on a clean close."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from ..errors import CassetteError, CassetteModeError
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
    """The write side of one open cassette: ``target`` is the file the recording belongs
    in, ``side`` (record mode) where it is written until :meth:`close`."""

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
        record = _records(self.target, directory, record)
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
            self._start(path, directory)

    def _start(self, path: Path, directory: bool) -> None:
        self._record_lock = lock = RecordLock(self.target)
        if directory and path.is_dir():
            self._stale = stale_shards(path, self.target)
        self.side = partial_path(self.target)
        try:
            self.recorder()
        except BaseException:
            lock.release()
            raise

    @property
    def redacted(self) -> int:
        return self._recorder.redacted if self._recorder is not None else 0

    def recorder(self) -> Recorder:
        if self._recorder is None:
            with self._lock:
                if self._recorder is None:
                    self._recorder = self._open()
        return self._recorder

    def _open(self) -> Recorder:
        if self.side is not None:  # this process's alone: no flock
            writer = Writer(self.side, fsync=self._fsync, mode=private_mode(self.target))
            recorder = Recorder(writer, self._redactor)
            recorder.header(self._meta)
            return recorder
        writer = Writer(self.target, fsync=self._fsync)  # refuses a link
        recorder = Recorder(writer, self._redactor)
        repair_tail(self.target)  # (a header cut short leaves the file empty)
        if not self.target.stat().st_size:
            # several processes may be appending to a new file: written if still empty
            writer.preamble = recorder.dumped(header_line(self._meta))
        return recorder

    def close(self) -> None:
        """Finish: the side file replaces the cassette, unless a write to it failed."""
        try:
            if self._recorder is not None:
                self._recorder.writer.close()
            if self.side is not None:
                self._publish(self.side)
        finally:
            if self._record_lock is not None:
                self._record_lock.release()

    def _publish(self, side: Path) -> None:
        failed = self.recorder().writer.failed  # (record mode opened its recorder at once)
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
        """Stop without replacing the cassette; ``exc`` gets a note naming the side file."""
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
            setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010


def _records(target: Path, directory: bool, record: bool) -> bool:
    """Whether the sink records from scratch (else it appends)."""
    if record and directory and continues_run(target):
        record = False  # a worker of this run opening its shard again: it goes on
    if not record and written_whole(target):
        raise CassetteModeError(_no_append(target))
    return record


def _no_append(target: Path) -> str:
    stem = target.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".ndjson")
    shards = target.with_name(stem or "shards")
    move = f"`mkdir {shards} && mv {target} {shards}/`, then " if target.exists() else ""
    return (
        f"cannot append to {target}: a .gz cassette is written whole (mode='record'), never "
        f"appended to; to append, from one process or several, use a shard directory: "
        f"{move}open {shards}/ with mode='append'"
    )
