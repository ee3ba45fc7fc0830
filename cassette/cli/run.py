"""``cassette run``: a command with its cassettes' mode and path set (its calls recorded by
:mod:`cassette.autorecord`'s import hook, or a ``cassette serve``)."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from .console import Console
from .run_report import Recorded

__all__ = ["bootstrap", "cassette_path", "readable_cassette", "run", "run_command", "spawn"]


def bootstrap(env: dict[str, str], *, offline: bool) -> dict[str, str]:
    """The variables that make a Python child run :mod:`cassette.autorecord` at start-up."""
    import cassette

    package = os.path.dirname(os.path.abspath(cassette.__file__))
    paths = [os.path.join(package, "autorecord", "boot"), os.path.dirname(package)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    out = {"PYTHONPATH": os.pathsep.join(paths), "CASSETTE_AUTO": "1"}
    if offline:
        out["CASSETTE_OFFLINE"] = "1"
    return out


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--mode",
    type=click.Choice(["replay", "record", "auto", "append", "passthrough"], case_sensitive=False),
    default=None,
    help="The mode of every cassette the command opens, whatever its code passes as mode= "
    "(set as CASSETTE_FORCE_MODE and CASSETTE_MODE). Default: CASSETTE_MODE=auto, which "
    "applies where the code passes no mode.",
)
@click.option("--cassette", "path", metavar="PATH", help="Set as CASSETTE_PATH (made absolute).")
@click.option(
    "--auto/--no-auto",
    default=True,
    help="With --cassette: record or replay every openai/anthropic client and litellm call "
    "a Python command makes, with no change to its code (default). --no-auto only sets the "
    "environment, for code that opens its cassette itself.",
)
@click.option(
    "--allow-network",
    is_flag=True,
    help="With --mode replay and --auto: let the command open TCP connections (by default "
    "it may not, so a replay proves it is offline).",
)
@click.option(
    "--via",
    type=click.Choice(["hook", "server"]),
    default=None,
    help="With --cassette: how the command's calls reach the cassette: the import hook "
    "(Python commands, the default for them) or a `cassette serve` started for the command "
    "with OPENAI_BASE_URL, OPENAI_API_BASE and ANTHROPIC_BASE_URL pointing at it (the "
    "default for any other command).",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD ...")
def run(
    mode: str | None,
    path: str | None,
    auto: bool,
    allow_network: bool,
    via: str | None,
    command: tuple[str, ...],
) -> None:
    """Run a command with its cassettes' mode and path set.

    --mode overrides the code's mode= (CASSETTE_FORCE_MODE), so it is how to re-record a
    script that opens its cassette with mode="replay". Exits with the command's exit code
    (127: not found, 126: not runnable, 128+N: killed by signal N).

    With --cassette, a Python command's openai (OpenAI, AsyncOpenAI, AzureOpenAI),
    anthropic (Anthropic, AsyncAnthropic) and litellm calls go through that cassette with
    no change to its code; calls outside cassette.episode() find their episode from their
    conversation (docs/concepts/episodes.md); replay refuses every TCP connection.

    \b
    Examples:
      cassette run --mode record --cassette runs/a.jsonl -- python eval.py --n 8
      cassette run --mode replay --cassette runs/a.jsonl -- python eval.py --n 8
      cassette run --mode record -- python agent.py --task 3
    """
    console = Console()
    _refuse_unknown_option(command)
    opens = (mode or "auto").lower()  # the mode the recorder opens with
    env = _environment(opens, mode)
    if path is not None:  # (--no-auto without --mode: the code's own mode, unchecked)
        checked = opens if auto or mode else ""
        redo = ["cassette", "run", "--mode", "record", "--cassette", path, "--", *command]
        env["CASSETTE_PATH"] = cassette_path(path, checked, shlex.join(redo), console)
    if path is None or not auto:
        spawn(command, env, console)
    offline = opens == "replay" and not allow_network
    sys.exit(_recorded_run(command, env, opens, console, via=via, offline=offline))


def _environment(opens: str, forced: str | None) -> dict[str, str]:
    """The command's environment with its cassettes' mode set (and a replay's dummy API keys)."""
    from ..replay.modes import REPLAY_KEYS

    env = {**os.environ, "CASSETTE_MODE": opens}
    if opens == "replay":
        env.update((k, v) for k, v in REPLAY_KEYS.items() if not env.get(k))
    if forced is not None:
        env["CASSETTE_FORCE_MODE"] = forced.lower()
    return env


def _refuse_unknown_option(command: tuple[str, ...]) -> None:
    """A command that starts with ``-`` is a mistyped option of ours (``--mdoe``)."""
    if command and command[0].startswith("-"):
        ctx = click.get_current_context()
        options = [o for p in ctx.command.params for o in (*p.opts, *p.secondary_opts)]
        raise click.NoSuchOption(command[0], possibilities=options, ctx=ctx)


def _recorded_run(
    command: tuple[str, ...],
    env: dict[str, str],
    mode: str,
    console: Console,
    *,
    via: str | None,
    offline: bool,
) -> int:
    """Run ``command`` with its calls on the cassette, say what it recorded; its exit code."""
    import shutil

    from ..serve.child import is_python

    where = env["CASSETTE_PATH"]
    found = shutil.which(command[0]) is not None
    served = found and (via == "server" or (via is None and not is_python(command)))
    recorded = Recorded(where, mode)
    if served:
        code = _run_served(command, env, where, mode, console)
    else:
        env.update(bootstrap(env, offline=offline))
        env["CASSETTE_NET_LOG"] = str(recorded.net_log)
        code = run_command(command, env, console)
    recorded.report(served, failed=code != 0)
    return code


def _run_served(
    command: tuple[str, ...], env: dict[str, str], where: str, mode: str, console: Console
) -> int:
    from ..serve.child import ServedChild

    child = ServedChild(where, mode, env)
    env.update(child.start())
    try:
        return run_command(command, env, console)
    finally:
        if child.stop() != 0:
            console.warn(f"cassette serve for the command did not close {where} cleanly")


def cassette_path(path: str, mode: str, redo: str, console: Console) -> str:
    """``--cassette PATH`` for the child: a local path checked and made absolute, a URL as is
    (``redo``: the command that records it, named when there is nothing to replay)."""
    from ..storage.remote import local_or_url

    local = local_or_url(path)
    if not isinstance(local, os.PathLike):
        return local  # a URL: abspath would make it a local path
    _check_local(local, path, mode, redo, console)
    where = os.path.abspath(local)
    if path.endswith(("/", os.sep)):  # a shard directory: abspath drops the slash
        where += os.sep
    return where


def _check_local(local: Path, path: str, mode: str, redo: str, console: Console) -> None:
    """Fail in one line where the child would: nothing to replay, not a cassette, read-only."""
    exists = local.exists()
    if mode == "replay" and not exists:
        console.fail(f"no cassette at {path} to replay; check the path, or record it first: {redo}")
    if mode in {"replay", "auto"} and local.is_file():
        readable_cassette(local)
    if mode in {"record", "append"} or (mode == "auto" and not exists):
        _writable_place(path, mode, console)


def readable_cassette(local: Path) -> Any:
    """The first record of ``local``, read quietly ({} if none); not a cassette: it raises."""
    import warnings

    from ..storage.lines import read_records

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a cut-short last line: not this reader's to report
        return next(read_records(local), (0, {}))[1]


def _writable_place(path: str, mode: str, console: Console) -> None:
    import tempfile

    local = Path(path)
    place = _existing_place(path)
    try:  # (a real file: root passes os.access where nothing can be made, as in /proc)
        tempfile.TemporaryFile(dir=place).close()
    except OSError:
        console.fail(
            f"cannot record {path}: {place} is not writable; record into a directory you can "
            "write to, or change its rights"
        )
    if mode == "append" and local.is_file() and not os.access(local, os.W_OK):
        console.fail(f"cannot append to {path}: the file is read-only; change its rights")


def _existing_place(path: str) -> Path:
    """The directory the recorder writes ``path`` in, or its nearest existing parent."""
    local = Path(path)
    place = local if path.endswith(("/", os.sep)) or local.is_dir() else local.parent
    while not place.exists() and place != place.parent:
        place = place.parent  # the directories the recorder would create
    return place


def spawn(command: tuple[str, ...], env: dict[str, str], console: Console) -> NoReturn:
    sys.exit(run_command(command, env, console))


def run_command(command: tuple[str, ...], env: dict[str, str], console: Console) -> int:
    """Run ``command`` with ``env``; its exit code (127: not found, 126: not runnable, 128+N)."""
    import subprocess

    try:
        proc = subprocess.Popen(list(command), env=env)
    except FileNotFoundError:
        console.fail(f"command not found: {command[0]}; check its name and PATH", code=127)
    except PermissionError:
        console.fail(f"cannot run {command[0]}: permission denied; make it executable", code=126)
    while proc.returncode is None:
        with contextlib.suppress(KeyboardInterrupt):  # the command got it too: wait for its end
            proc.wait()
    return proc.returncode if proc.returncode >= 0 else 128 - proc.returncode
