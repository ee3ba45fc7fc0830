"""The output side of the ``cassette`` command: the one :class:`Console` that prints,
one-line errors (usage errors included), progress bars, and the helpers that commands
share to open their inputs. Heavy imports (rich, the reader) stay inside functions.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .._gc import paused_gc

if TYPE_CHECKING:
    from ..index import Index

__all__ = [
    "EXTRAS",
    "LARGE_BYTES",
    "Console",
    "OneLineGroup",
    "count_lines",
    "existing",
    "large_bytes",
    "load",
    "paused_gc",
    "plural",
    "reporting_warnings",
    "size",
    "user_error",
    "working",
    "writable",
]

Part = str | tuple[str, str | None]  # plain text, or (text, rich style)
LARGE_BYTES = 16 << 20  # inputs at least this large get a progress bar (on a terminal)


def large_bytes() -> int:
    """:data:`LARGE_BYTES`, read when called (tests lower it to draw the bars)."""
    return LARGE_BYTES


def _one_line(message: str) -> str:
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
    output) are never styled. Progress bars go to stderr, only when both stdout and
    stderr are terminals (``terminal`` overrides the check), and vanish when done.
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

            self._rich = RichConsole(
                force_terminal=True,
                no_color=False,
                color_system="standard",
                highlight=False,
                markup=False,
                emoji=False,
                soft_wrap=True,
            )

    def print(self, text: str = "", style: str | None = None) -> None:
        self.line((text, style))

    def line(self, *parts: Part) -> None:
        """One line made of parts: plain text, or (text, style) coloured when colour is on."""
        if self._rich is None:
            click.echo("".join(p if isinstance(p, str) else p[0] for p in parts))
            return
        from rich.text import Text

        text = Text()
        for part in parts:
            if isinstance(part, str):
                text.append(part)
            else:
                text.append(part[0], style=part[1] or "")
        self._rich.print(text, soft_wrap=True)

    def echo(self, text: str) -> None:
        """Machine output, as is."""
        click.echo(text)

    def json(self, data: Any) -> None:
        """Machine output as indented JSON (never coloured)."""
        import orjson

        opts = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS
        click.echo(orjson.dumps(data, option=opts).decode())

    def warn(self, message: str) -> None:
        click.echo(f"warning: {_one_line(message)}", err=True)

    def fail(self, message: str, code: int = 2) -> NoReturn:
        """Print ``error: message`` as one line on stderr and exit with ``code``."""
        click.echo(f"error: {_one_line(message)}", err=True)
        sys.exit(code)

    @contextlib.contextmanager
    def progress(
        self, label: str, total: int | None = None, *, show: bool = True
    ) -> Iterator[Callable[[int], None]]:
        """Yield ``advance(n)``; a bar (a spinner if ``total`` is None) is drawn only when
        ``show`` and on a terminal, so piped output gets nothing extra."""
        if not (show and self.terminal):
            yield lambda n: None
            return
        from rich import progress as rp
        from rich.console import Console as RichConsole

        err = RichConsole(stderr=True, force_terminal=True, no_color=not self.color)
        columns = (rp.SpinnerColumn(), rp.TextColumn("{task.description}"), rp.BarColumn())
        with rp.Progress(
            *columns, rp.MofNCompleteColumn(), rp.TimeElapsedColumn(), console=err, transient=True
        ) as bar:
            task = bar.add_task(label, total=total)
            yield lambda n: bar.advance(task, n)


def plural(count: int, word: str) -> str:
    """``1 episode``, ``3 episodes``."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def existing(console: Console, path: str) -> Path:
    """An input cassette: a file, or a directory holding shard files."""
    from ..store import shard_files

    target = Path(path)
    if not target.exists():
        console.fail(f"no such file or directory: {path}; check the path")
    try:
        if target.is_dir() and not shard_files(target):
            console.fail(f"{path} is a directory with no shard files (*.jsonl); check the path")
    except OSError as exc:
        console.fail(f"cannot read {path}: {exc.strerror or exc}; check its permissions")
    return target


def size(path: Path) -> int:
    files = path.iterdir() if path.is_dir() else [path]
    return sum(f.stat().st_size for f in files if f.is_file())


def count_lines(path: Path) -> int | None:
    """Lines of a plain file or shard directory (a progress total); None for gzip."""
    from ..store import shard_files

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
    console: Console, label: str, total: int | None = None, *, show: bool
) -> Iterator[Callable[[int], None]]:
    """A long operation: yields ``advance(n)`` of a progress bar (drawn when ``show`` and
    on a terminal), runs without cyclic GC, and prints each CassetteWarning afterwards."""
    bar = console.progress(label, total, show=show)
    with reporting_warnings(console), paused_gc(), bar as advance:
        yield advance


def load(console: Console, path: Path) -> Index:
    """The index of a cassette; a bad file is one ``error:`` line and exit 2."""
    from ..errors import CassetteError
    from ..index import load_index

    with working(console, f"reading {path.name}", show=size(path) >= LARGE_BYTES):
        try:
            return load_index([path])
        except CassetteError as exc:
            console.fail(str(exc))
        except OSError as exc:
            console.fail(f"cannot read {path}: {exc.strerror}; check the path and its permissions")


def writable(console: Console, out: str, force: bool) -> Path:
    """``out`` as a path, if it may be written: not a directory, and new unless ``force``."""
    target = Path(out)
    if target.is_dir():
        console.fail(f"{out} is a directory; name the output file, e.g. {out.rstrip('/')}.jsonl")
    if target.exists() and not force:
        console.fail(f"{out} exists; pass --force to overwrite it, or name another file")
    return target


# the commands that need an extra of the package: command -> extra
EXTRAS = {"tau2": "tau2"}
# what to check when a command cannot reach its endpoint
ENDPOINT_HINTS = {
    "demo": "check OPENAI_BASE_URL (and OPENAI_API_KEY), or run `cassette demo` without --live",
    "tau2": "check --base-url (and --api-key)",
}
_NETWORK_ERRORS = {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout"}


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _url_of(exc: BaseException) -> str | None:
    """The URL of the request an openai or httpx error was about, if it knows it."""
    try:
        request = exc.request  # type: ignore[attr-defined]  # httpx raises if it has none
    except (AttributeError, RuntimeError):
        return None
    url = getattr(request, "url", None)
    return None if url is None else str(url)


def user_error(exc: BaseException, command: str) -> tuple[str, int] | None:
    """The one-line message and exit code for ``exc`` escaping ``cassette COMMAND``, if it
    is the user's to fix (a missing extra, a bad path, a cassette error) or a network
    failure; None for a bug, which keeps its traceback."""
    from ..errors import CassetteError

    chain = _chain(exc)
    if isinstance(exc, ModuleNotFoundError) and command in EXTRAS:
        extra = EXTRAS[command]
        return (
            f"cassette {command} needs the {extra} extra ({exc}); "
            f"pip install 'rollout-cassette[{extra}]'",
            2,
        )
    hint = ENDPOINT_HINTS.get(command, "check the endpoint's address and the network")
    network = [e for e in chain if type(e).__name__ in _NETWORK_ERRORS]
    if network or isinstance(exc, (ConnectionError, TimeoutError)):
        url = next(filter(None, (_url_of(e) for e in network)), None)
        where = f"cannot reach {url}" if url else "cannot reach the endpoint"
        cause = chain[-1]
        reason = getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
        return f"{where} ({reason}); {hint}", 1
    # an HTTP error status from the endpoint (a wrong key, model or URL): the SDK's message
    answered = [e for e in chain if isinstance(getattr(e, "status_code", None), int)]
    url = _url_of(answered[0]) if answered else None
    if url is not None:
        status = answered[0]
        text = getattr(status, "message", None) or str(status)
        return f"{url} answered {status.status_code} ({text}); {hint}", 1  # type: ignore[attr-defined]
    if isinstance(exc, CassetteError):
        return str(exc), 2
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}; check the path and its permissions", 2
    return None


class _OneLineUsage(click.UsageError):
    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def _one_line_usage(exc: click.UsageError) -> click.UsageError:
    if isinstance(exc, (_OneLineUsage, click.exceptions.NoArgsIsHelpError)):
        return exc
    where = exc.ctx.command_path if exc.ctx is not None else "cassette"
    message = _one_line(exc.format_message()).rstrip(".")
    return _OneLineUsage(f"{message}; see `{where} --help`", exc.ctx)


class OneLineGroup(click.Group):
    """Usage errors are one line too: ``error: <what>; see `cassette CMD --help```."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line_usage(exc) from None
        except Exception as exc:  # a user error or a network failure: one line, no traceback
            found = user_error(exc, ctx.invoked_subcommand or "")
            if found is None:
                raise
            message, code = found
            click.echo(f"error: {_one_line(message)}", err=True)
            sys.exit(code)

    # commands that live in their own module, imported only when used ("module:object")
    lazy: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, name = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), name)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)
