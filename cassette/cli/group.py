"""The ``cassette`` group's class: lazy commands, and one-line errors for usage errors, what a
user can fix and network failures (a bug keeps its traceback)."""

from __future__ import annotations

import contextlib
import difflib
import importlib
import os
import sys
from typing import Any

import click

from .console import Console, one_line, reason

__all__ = ["OneLineGroup", "user_error"]

ENDPOINT_HINTS = {  # what to check when a command cannot reach its endpoint
    "demo": "check OPENAI_BASE_URL (and OPENAI_API_KEY), or run `cassette demo` without --live",
    "tau2": "check --base-url (and --api-key)",
}
Found = tuple[str, int] | None  # (message, exit code), or None: not the user's to fix
_NETWORK_ERRORS = {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout"}


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _url_of(exc: BaseException) -> str | None:
    try:
        request = exc.request  # type: ignore[attr-defined]  # httpx raises if it has none
    except (AttributeError, RuntimeError):
        return None
    url = getattr(request, "url", None)
    return None if url is None else str(url)


def _unreached(exc: BaseException, chain: list[BaseException], hint: str) -> Found:
    network = [e for e in chain if type(e).__name__ in _NETWORK_ERRORS]
    if not network and not isinstance(exc, (ConnectionError, TimeoutError)):
        return None
    url = next(filter(None, (_url_of(e) for e in network)), None)
    return f"cannot reach {url or 'the endpoint'} ({reason(chain[-1])}); {hint}", 1


def _refused(chain: list[BaseException], hint: str) -> Found:
    """An HTTP error status from the endpoint (a wrong key, model or URL): the SDK's message."""
    answered = [e for e in chain if isinstance(getattr(e, "status_code", None), int)]
    url = _url_of(answered[0]) if answered else None
    if url is None:
        return None
    text = getattr(answered[0], "message", None) or str(answered[0])
    return f"{url} answered {answered[0].status_code} ({text}); {hint}", 1  # type: ignore[attr-defined]


def _own(exc: BaseException) -> Found:
    from ..errors import CassetteError

    if isinstance(exc, CassetteError):
        return str(exc), 1 if getattr(exc, "unreachable", False) else 2
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}; check the path and its permissions", 2
    return None


def user_error(exc: BaseException, command: str) -> Found:
    """The one-line message and exit code of ``exc``, if the user can fix it; None for a bug."""
    if isinstance(exc, ModuleNotFoundError) and command == "tau2":
        fix = "pip install 'rollout-cassette[tau2]'"
        return f"cassette tau2 needs the tau2 extra ({exc}); {fix}", 2
    chain = _chain(exc)
    hint = ENDPOINT_HINTS.get(command, "check the endpoint's address and the network")
    return _unreached(exc, chain, hint) or _refused(chain, hint) or _own(exc)


def _quiet_stdout() -> None:
    """stdout to /dev/null: flushing it at exit raises no second BrokenPipeError."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _again(sub: str | None) -> str:
    return f"run `cassette {sub}` again to finish" if sub else "run the command again"


class _OneLineUsage(click.UsageError):
    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def _one_line_usage(exc: click.UsageError, command: str = "cassette") -> click.UsageError:
    """``exc`` as one line naming the help of its command (``command`` where it has no context)."""
    if isinstance(exc, (_OneLineUsage, click.exceptions.NoArgsIsHelpError)):
        return exc
    where = exc.ctx.command_path if exc.ctx is not None else command
    message = one_line(exc.format_message()).rstrip(".")
    return _OneLineUsage(f"{message}; see `{where} --help`", exc.ctx)


class OneLineGroup(click.Group):
    """Usage errors are one line too: ``error: <what>; see `cassette CMD --help```."""

    lazy: dict[str, str] = {}  # command -> "module:object", imported when used

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
            sub = ctx.invoked_subcommand
            raise _one_line_usage(exc, f"{ctx.command_path} {sub}" if sub else "cassette") from None
        except BrokenPipeError:  # `cassette diff A B | head`: the reader has what it wanted
            _quiet_stdout()
            sys.exit(141)  # as a process killed by SIGPIPE, what a shell reports for `yes | head`
        except KeyboardInterrupt:  # 130 as a shell says; click's exit 1 means "differ" to diff
            Console.fail("interrupted; " + _again(ctx.invoked_subcommand), 130)
        except Exception as exc:  # a user error or a network failure: one line, no traceback
            found = user_error(exc, ctx.invoked_subcommand or "")
            if found is None:
                raise
            Console.fail(*found)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1)
            hint = f" Did you mean '{near[0]}'?" if near else ""
            raise click.UsageError(f"No such command '{name}'.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module, _, name = self.lazy[cmd_name].partition(":")
            command = getattr(importlib.import_module(module), name)
            assert isinstance(command, click.Command)
            self.add_command(command, cmd_name)
        return super().get_command(ctx, cmd_name)
