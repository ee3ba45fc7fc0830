"""The output side of the ``cassette`` command: the one :class:`Console` that prints,
one-line errors and warnings, progress bars, and the helpers that commands share to
open their inputs (the group that makes every error one line: :mod:`.group`). Heavy
imports (rich, the reader) stay inside functions.
"""

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
    from ..errors import CassetteError
    from ..storage.index import Index

__all__ = ["LARGE_BYTES", "Console", "existing", "failing", "format_option", "load",
           "one_line", "overwritten", "plural", "reporting_warnings", "scratch_dir",
           "upload_on_exit", "uploaded", "working", "writable"]  # fmt: skip

Part = str | tuple[str, str | None]  # plain text, or (text, rich style)
LARGE_BYTES = 16 << 20  # inputs at least this large get a progress bar (on a terminal)
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
    out = ""
    for part in filter(None, (line.strip() for line in message.splitlines())):
        out += ("" if not out else " " if out.endswith(":") else "; ") + part
    return out


def _color_option() -> bool | None:
    """The group's --color/--no-color of the command being run (None: not given)."""
    ctx = click.get_current_context(silent=True)
    value = ctx.find_root().params.get("color") if ctx is not None else None
    return value if isinstance(value, bool) else None


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty()) if callable(isatty) else False


class Console:
    """The one place that prints.

    Colour: ``color`` when given, else the group's ``--color/--no-color``, else on when
    stdout is a terminal and ``NO_COLOR`` is unset. :meth:`echo` and :meth:`json` (machine
    output) are never styled. ``terminal``: both stdout and stderr are terminals (where
    :func:`working` draws its progress bars).
    """

    def __init__(self, color: bool | None = None, *, terminal: bool | None = None) -> None:
        if terminal is None:
            terminal = _isatty(sys.stdout) and _isatty(sys.stderr)
        self.terminal = terminal
        if color is None:
            color = _color_option()
        if color is None:
            color = _isatty(sys.stdout) and not os.environ.get("NO_COLOR")
        self.color = color
        self._rich: Any = None
        if color:
            from rich.console import Console as RichConsole

            self._rich = RichConsole(force_terminal=True, color_system="standard",
                                     highlight=False, markup=False, emoji=False)  # fmt: skip

    def print(self, text: str = "", style: str | None = None) -> None:
        self.line((text, style))

    def line(self, *parts: Part) -> None:
        """One line made of parts: plain text, or (text, style) coloured when colour is on."""
        if self._rich is None:
            click.echo("".join(p if isinstance(p, str) else p[0] for p in parts))
            return
        from rich.text import Text

        styled = [p if isinstance(p, str) else (p[0], p[1] or "") for p in parts]
        self._rich.print(Text.assemble(*styled), soft_wrap=True)

    def echo(self, text: str) -> None:
        """Machine output, as is."""
        click.echo(text)

    def json(self, data: Any) -> None:
        """Machine output as indented JSON (never coloured)."""
        import orjson

        opts = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        click.echo(orjson.dumps(data, option=opts).decode())

    def warn(self, message: str) -> None:
        click.echo(f"warning: {one_line(message)}", err=True)

    def fail(self, message: str, code: int = 2) -> NoReturn:
        """Print ``error: message`` as one line on stderr and exit with ``code``."""
        click.echo(f"error: {one_line(message)}", err=True)
        sys.exit(code)


def plural(count: int, word: str) -> str:
    """``1 episode``, ``3 episodes``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def existing(console: Console, path: str) -> Path:
    """An input cassette: a file, or a directory holding shard files."""
    from ..storage.store import shard_files

    target = _local_input(console, path)
    if not target.exists():
        console.fail(f"no such file or directory: {path}; check the path")
    try:
        if target.is_dir() and not shard_files(target):
            console.fail(f"{path} is a directory with no shard files (*.jsonl); check the path")
    except OSError as exc:
        console.fail(f"cannot read {path}: {exc.strerror or exc}; check its permissions")
    return target


def _size(path: Path) -> int:
    files = path.iterdir() if path.is_dir() else [path]
    return sum(f.stat().st_size for f in files if f.is_file())


def _count_lines(path: Path) -> int | None:
    """Lines of a plain file or shard directory (a progress total); None for gzip."""
    from ..storage.store import shard_files

    total = 0
    for file in shard_files(path) if path.is_dir() else [path]:
        with open(file, "rb") as f:
            if f.read(2) == b"\x1f\x8b":
                return None
            f.seek(0)
            while block := f.read(1 << 20):
                total += block.count(b"\n")
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
    """A long operation: runs without cyclic GC, prints each CassetteWarning afterwards,
    and yields ``advance(n)`` of a progress bar on stderr (a spinner if ``total`` is None;
    ``lines``: the lines of the first input), drawn on a terminal when the ``inputs`` add
    up to :data:`LARGE_BYTES`, gone when done."""
    show = console.terminal and bool(inputs) and sum(_size(p) for p in inputs) >= LARGE_BYTES
    with reporting_warnings(console), paused_gc():
        if not show:
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
    """The index of a cassette; a bad file is one ``error:`` line and exit 2."""
    from ..errors import CassetteError
    from ..storage.index import load_index

    with working(console, f"reading {path.name}", [path]):
        try:
            return load_index([path])
        except CassetteError as exc:
            console.fail(str(exc))
        except OSError as exc:
            console.fail(f"cannot read {path}: {exc.strerror}; check the path and its permissions")


def writable(console: Console, out: str, force: bool) -> Path:
    """``out`` as a path, if it may be written: not a directory, and new unless ``force``.
    A URL is written to a local file that is uploaded when the command ends."""
    if out.endswith(("/", os.sep)):  # a directory (a shard directory, for a cassette)
        console.fail(f"{out} is a directory; name the output file, e.g. {out.rstrip('/')}.jsonl")
    target = _local_output(console, out, force)
    if target.is_dir():
        console.fail(f"{out} is a directory; name the output file, e.g. {out.rstrip('/')}.jsonl")
    if target.exists() and not force:
        console.fail(f"{out} exists; pass --force to overwrite it, or name another file")
    return target


def overwritten(console: Console, out: str) -> Path:
    """``out`` as a local path to write, replacing what is there; for a URL, a private file
    that :func:`uploaded` sends to it (the command calls it once the file is complete)."""
    return _local_output(console, out, True)


def failing(console: Console, exc: CassetteError) -> NoReturn:
    """``exc`` as one ``error:`` line; exit 1 for a store that cannot be reached, else 2."""
    console.fail(str(exc), 1 if getattr(exc, "unreachable", False) else 2)


def _local_input(console: Console, path: str) -> Path:
    """A local path for an input: a URL (``s3://...``) is fetched into a private copy."""
    from ..errors import CassetteError
    from ..storage.remote import described, local_or_url, materialize

    local = local_or_url(path)
    if isinstance(local, Path):
        return local
    try:
        copy = materialize(local)
    except CassetteError as exc:
        failing(console, exc)
    except Exception as exc:  # noqa: BLE001 - OSError, or a storage library's own (botocore's)
        console.fail(f"cannot read {path}: {described(exc)}; check the URL and its credentials")
    _discard_when_done(copy)
    return copy


def _discard_when_done(path: Path) -> None:
    """Remove ``path``'s private directory when the running command ends."""
    from ..storage.remote import discard

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(lambda: discard(path))


def scratch_dir() -> Path:
    """A new private directory, removed when the running command ends."""
    from ..storage.remote import private_dir

    path = private_dir()
    _discard_when_done(path)
    return path


def _local_output(console: Console, out: str, force: bool) -> Path:
    """A local path for an output; for a URL, a private file uploaded to it when the
    command calls :func:`uploaded` (if the command wrote it)."""
    from ..errors import CassetteError
    from ..storage.remote import described, listing, local_or_url, private_dir, remote_exists

    local = local_or_url(out)
    if isinstance(local, Path):
        return local
    try:
        exists = not force and remote_exists(listing(local))
    except CassetteError as exc:
        failing(console, exc)
    except Exception as exc:  # noqa: BLE001 - as in _local_input
        console.fail(f"cannot list {out}: {described(exc)}; check the URL and its credentials")
    if exists:
        console.fail(f"{out} exists; pass --force to overwrite it, or name another URL")
    name = local.rstrip("/").rsplit("/", 1)[-1]
    target = private_dir() / name
    upload_on_exit(target, local)
    return target


def upload_on_exit(target: Path, url: str) -> None:
    """Have the running command upload ``target`` (a private file or directory) to ``url``
    when it calls :func:`uploaded`, which it does once its output is complete. When the
    command ends, ``target``'s private directory is removed, uploaded or not: a command
    that fails uploads nothing and leaves no local copy behind."""
    ctx = click.get_current_context()
    ctx.meta.setdefault(_UPLOADS, []).append((target, url))
    _discard_when_done(target)


def uploaded(console: Console) -> None:
    """Upload what the running command wrote for a URL (see :func:`upload_on_exit`); call
    it before saying the command is done. A failed upload is one ``error:`` line (exit 1
    when the store cannot be reached, else 2) and leaves no new object behind."""
    from ..errors import CassetteError
    from ..storage.remote import discard, upload

    ctx = click.get_current_context(silent=True)
    pending: list[tuple[Path, str]] = ctx.meta.get(_UPLOADS, []) if ctx is not None else []
    while pending:
        target, url = pending.pop(0)
        try:
            if target.exists():
                upload(target, url)
        except CassetteError as exc:
            failing(console, exc)
        finally:
            discard(target)
