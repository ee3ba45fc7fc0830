"""``cassette run``: a command with the mode of its cassettes (CASSETTE_FORCE_MODE,
CASSETTE_MODE) and CASSETTE_PATH set."""

from __future__ import annotations

import sys

import click

from .console import Console

__all__ = ["run"]


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
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD ...")
def run(mode: str | None, path: str | None, command: tuple[str, ...]) -> None:
    """Run a command with its cassettes' mode and path set.

    --mode overrides the code's mode= (CASSETTE_FORCE_MODE), so it is how to re-record a
    script that opens its cassette with mode="replay". Exits with the command's exit code
    (127: not found, 126: not runnable, 128+N: killed by signal N).

    \b
    Examples:
      cassette run --mode record -- python agent.py --task 3
      cassette run --mode replay --cassette runs/a.jsonl -- pytest -q
    """
    import os
    import subprocess

    console = Console()
    env = {**os.environ, "CASSETTE_MODE": (mode or "auto").lower()}
    if mode is not None:
        env["CASSETTE_FORCE_MODE"] = mode.lower()
    if path is not None:
        env["CASSETTE_PATH"] = os.path.abspath(path)
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
