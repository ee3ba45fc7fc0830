"""The :class:`Console` that prints, progress bars, and the commands' inputs and outputs (local
paths or URLs)."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..storage.gc import paused_gc

if TYPE_CHECKING:
    from ..storage.index import Index

__all__ = ["LARGE_BYTES", "PORT", "Console", "existing", "format_option", "load",
           "one_line", "overwritten", "plural", "reason", "reporting_warnings", "scratch_dir",
           "upload_on_exit", "uploaded", "working", "writable"]  # fmt: skip

Part = str | tuple[str, str | None]  # plain text, or (text, rich style)
LARGE_BYTES = 16 << 20  # inputs at least this large get a progress bar (on a terminal)
PORT = click.IntRange(0, 65535)  # a --port: one line for any other number, not a traceback
_UPLOADS = "cassette.uploads"  # click context meta: the (local, URL) pairs of the command


format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for a terminal, json for tools (never coloured).",
)


def one_line(message: str) -> str:
    """The lines of ``message`` joined by "; " (by a space after a line ending in ":")."""
    return "; ".join(filter(None, map(str.strip, message.splitlines()))).replace(":; ", ": ")


def reason(exc: BaseException) -> str:
    """Why ``exc`` happened, in a few words (an OSError's strerror, else its message)."""
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _isatty(stream: Any) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def _default_color() -> bool:
    ctx = click.get_current_context(silent=True)
    given = ctx.find_root().params.get("color") if ctx is not None else None
    if isinstance(given, bool):
        return given
    return _isatty(sys.stdout) and not os.environ.get("NO_COLOR")


class Console:
    """The one place that prints (never styling :meth:`json`); ``terminal``: progress bars drawn."""

    def __init__(self, color: bool | None = None) -> None:
        self.terminal = _isatty(sys.stdout) and _isatty(sys.stderr)
        self.color = _default_color() if color is None else color
        self._rich: Any = None
        if self.color:
            from rich.console import Console as RichConsole

            self._rich = RichConsole(force_terminal=True, color_system="standard",
                                     highlight=False, markup=False, emoji=False)  # fmt: skip

    def print(self, text: str = "", style: str | None = None) -> None:
        self.line((text, style))

    def line(self, *parts: Part) -> None:
        """One line made of parts: plain text, or (text, style) coloured when colour is on."""
        if self._rich is None:
            click.echo("".join(p if isinstance(p, str) else p[0] for p in parts))
        else:
            from rich.text import Text

            styled = [p if isinstance(p, str) else (p[0], p[1] or "") for p in parts]
            self._rich.print(Text.assemble(*styled), soft_wrap=True)

    def json(self, data: Any) -> None:
        import orjson

        opts = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        click.echo(orjson.dumps(data, option=opts).decode())

    @staticmethod
    def warn(message: str) -> None:
        click.echo(f"warning: {one_line(message)}", err=True)

    @staticmethod
    def fail(message: str, code: int = 2) -> NoReturn:
        click.echo(f"error: {one_line(message)}", err=True)
        sys.exit(code)


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def existing(console: Console, path: str) -> Path:
    """An input cassette: a file, or a directory holding shard files (a URL: a local copy)."""
    from ..storage.store import shard_files

    target = _local_input(path)
    if not target.exists():
        console.fail(f"no such file or directory: {path}; check the path")
    if target.is_dir() and not shard_files(target):  # (an unreadable one: the group's line)
        console.fail(f"{path} is a directory with no shard files (*.jsonl); check the path")
    return target


def _files(path: Path) -> list[Path]:
    from ..storage.store import shard_files

    return shard_files(path) if path.is_dir() else [path]


def _size(inputs: Sequence[Path]) -> int:
    return sum(f.stat().st_size for p in inputs for f in _files(p) if f.is_file())


def _count_lines(path: Path) -> int | None:
    """Lines of a plain file or shard directory (a progress total); None for gzip."""
    total = 0
    for file in _files(path):
        with open(file, "rb") as f:
            if f.read(2) == b"\x1f\x8b":
                return None
            f.seek(0)
            total += sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))
    return total


@contextlib.contextmanager
def reporting_warnings(console: Console) -> Iterator[None]:
    """Print each CassetteWarning raised inside (a cut-short last line, ...) as one line."""
    from ..errors import CassetteWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CassetteWarning)
        try:
            yield
        finally:
            for w in caught:
                if issubclass(w.category, CassetteWarning):
                    console.warn(str(w.message))
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


@contextlib.contextmanager
def working(
    console: Console,
    label: str,
    inputs: Sequence[Path] = (),
    total: int | None = None,
    *,
    lines: bool = False,
) -> Iterator[Callable[[int], None]]:
    """Without cyclic GC, warnings printed after; ``advance(n)`` of a bar for large inputs."""
    with reporting_warnings(console), paused_gc():
        if not (console.terminal and inputs and _size(inputs) >= LARGE_BYTES):
            yield lambda n: None
            return
        from rich import progress as rp
        from rich.console import Console as RichConsole

        total = _count_lines(inputs[0]) if lines else total
        err = RichConsole(stderr=True, force_terminal=True, no_color=not console.color)
        columns = [rp.SpinnerColumn(), rp.TextColumn("{task.description}"), rp.BarColumn()]
        with rp.Progress(*columns, rp.MofNCompleteColumn(), rp.TimeElapsedColumn(), console=err,
                         transient=True) as bar:  # fmt: skip
            task = bar.add_task(label, total=total)
            yield lambda n: bar.advance(task, n)


def load(console: Console, path: Path) -> Index:
    """The index of a cassette, under a progress bar if it is large."""
    from ..storage.index import load_index

    with working(console, f"reading {path.name}", [path]):
        return load_index([path])


def writable(console: Console, out: str, force: bool) -> Path:
    """``out`` as a local path to write (a URL: see :func:`uploaded`), new unless ``force``."""
    if out.endswith(("/", os.sep)) or (target := _local_output(console, out, force)).is_dir():
        console.fail(f"{out} is a directory; name the output file, e.g. {out.rstrip('/')}.jsonl")
    if target.exists() and not force:
        console.fail(f"{out} exists; pass --force to overwrite it, or name another file")
    return target


def overwritten(console: Console, out: str) -> Path:
    """``out`` as a local path to write, replacing what is there (a URL: see :func:`uploaded`)."""
    return _local_output(console, out, True)


def _local_input(path: str) -> Path:
    """A local path for an input: a URL (``s3://...``) is fetched into a private copy."""
    from ..storage.remote import local_or_url, materialize

    local = local_or_url(path)
    return local if isinstance(local, Path) else _discarded_when_done(materialize(local))


def _discarded_when_done(path: Path) -> Path:
    from ..storage.remote import discard

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(lambda: discard(path))
    return path


def scratch_dir() -> Path:
    """A new private directory, removed when the running command ends."""
    from ..storage.remote import private_dir

    return _discarded_when_done(private_dir())


def _local_output(console: Console, out: str, force: bool) -> Path:
    """A local path for an output; for a URL, a private file uploaded by :func:`uploaded`."""
    from ..storage.remote import listing, local_or_url, remote_exists

    local = local_or_url(out)
    if isinstance(local, Path):
        return local
    if not force and remote_exists(listing(local)):
        console.fail(f"{out} exists; pass --force to overwrite it, or name another URL")
    target = scratch_dir() / local.rstrip("/").rsplit("/", 1)[-1]
    upload_on_exit(target, local)
    return target


def upload_on_exit(target: Path, url: str) -> None:
    """Have :func:`uploaded` send ``target`` to ``url`` (a failed command uploads nothing)."""
    ctx = click.get_current_context()
    ctx.meta.setdefault(_UPLOADS, []).append((target, url))
    _discarded_when_done(target)


def uploaded(console: Console) -> None:
    """Upload what the command wrote for a URL; call it before saying the command is done."""
    from ..storage.remote import discard, upload

    ctx = click.get_current_context(silent=True)
    pending: list[tuple[Path, str]] = ctx.meta.get(_UPLOADS, []) if ctx is not None else []
    while pending:
        target, url = pending.pop(0)
        try:
            if target.exists():
                upload(target, url)
        finally:
            discard(target)
