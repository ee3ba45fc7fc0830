"""``cassette run``: a command with CASSETTE_MODE and CASSETTE_PATH set."""

from __future__ import annotations

import sys

import click

from .console import Console

__all__ = ["run"]


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--mode",
    type=click.Choice(["replay", "record", "auto", "append", "passthrough"], case_sensitive=False),
    default="auto",
    show_default=True,
    help="Set as CASSETTE_MODE.",
)
@click.option("--cassette", "path", required=True, metavar="PATH", help="Set as CASSETTE_PATH.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD ...")
def run(mode: str, path: str, command: tuple[str, ...]) -> None:
    """Run a command with CASSETTE_MODE and CASSETTE_PATH set.

    CASSETTE_PATH is made absolute. Exits with the command's exit code (127: not found,
    126: not runnable, 128+N: killed by signal N).

    \b
    Examples:
      cassette run --mode replay --cassette runs/a.jsonl -- pytest -q
      cassette run --mode record --cassette runs/new.jsonl -- python agent.py --task 3
    """
    import os
    import subprocess

    console = Console()
    env = {**os.environ, "CASSETTE_MODE": mode.lower(), "CASSETTE_PATH": os.path.abspath(path)}
    try:
        proc = subprocess.Popen(list(command), env=env)
    except FileNotFoundError:
        console.fail(f"command not found: {command[0]}; check its name and PATH", code=127)
    except PermissionError:
        console.fail(f"cannot run {command[0]}: permission denied; make it executable", code=126)
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:  # the command got the signal too: wait for it to finish
            continue
    sys.exit(code if code >= 0 else 128 - code)
