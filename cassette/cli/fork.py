"""``cassette fork BASE NEW -- CMD``: run a command whose cassettes fork from BASE."""

from __future__ import annotations

import json
import os

import click

from .console import Console

__all__ = ["fork"]


@click.command(context_settings={"allow_interspersed_args": True})
@click.argument("base", type=click.Path())
@click.argument("new", type=click.Path())
@click.option(
    "--at",
    "at",
    multiple=True,
    metavar="ENV=STEP",
    help="Fork episode ENV at step STEP of --channel even if it matches (repeatable).",
)
@click.option(
    "--channel", default="llm", show_default=True, help="The channel whose steps --at counts."
)
@click.option(
    "--live-channel",
    "live",
    multiple=True,
    metavar="NAME",
    help="Calls on this channel always go live, before the fork too (e.g. mcp).",
)
@click.option(
    "--auto/--no-auto",
    default=True,
    help="Record the openai/anthropic/litellm calls of a Python command with no change to "
    "its code, as `cassette run` does (default).",
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD ...")
def fork(
    base: str,
    new: str,
    at: tuple[str, ...],
    channel: str,
    live: tuple[str, ...],
    auto: bool,
    command: tuple[str, ...],
) -> None:
    """Run a command whose cassettes fork from BASE into NEW.

    Each episode replays from BASE while its requests match; from the first request that
    differs (or from the step --at names) it calls live, and NEW records it all, with
    where each episode forked (`cassette diff BASE NEW` lists the fork points).

    \b
    Examples:
      cassette fork runs/a.jsonl runs/b.jsonl -- python eval.py --model other
      cassette fork runs/a.jsonl runs/b.jsonl --at 17=6 -- python eval.py
    """
    from .run import bootstrap, cassette_path, spawn

    console = Console()
    command = command[1:] if command[:1] == ("--",) else command
    _check_base(console, base, new, command)
    named = _parse_at(console, at)
    if named:
        _named_in_base(console, base, named, channel)
    env = {k: v for k, v in os.environ.items() if k != "CASSETTE_FORCE_MODE"}
    env.update(
        CASSETTE_FORK_FROM=os.path.abspath(base),
        CASSETTE_PATH=cassette_path(new, "record", "", console),  # a URL as it is
        CASSETTE_MODE="record",
        CASSETTE_FORK_CHANNEL=channel,
        CASSETTE_FORK_LIVE=",".join(live),
    )
    if named:
        env["CASSETTE_FORK_AT"] = json.dumps(named)
    if auto:
        env.update(bootstrap(env, offline=False))
    spawn(command, env, console)


def _check_base(console: Console, base: str, new: str, command: tuple[str, ...]) -> None:
    """BASE is a local cassette (abspath would mangle a URL) and NEW another one."""
    import shlex
    from pathlib import Path

    from ..storage.remote import is_url
    from .run import readable_cassette

    if is_url(base):
        rest = shlex.join([new, "--", *command])
        console.fail(
            f"BASE {base} is a URL; fork from a local copy: cassette merge base.jsonl {base}, "
            f"then cassette fork base.jsonl {rest}"
        )
    if not os.path.exists(base):
        console.fail(f"no such file or directory: {base}; check the path")
    if os.path.abspath(base) == os.path.abspath(new):
        console.fail(f"NEW is BASE ({base}); name another cassette for the fork", code=2)
    if os.path.isfile(base):
        readable_cassette(Path(base))  # not a cassette: one line, not the child's


def _parse_at(console: Console, at: tuple[str, ...]) -> dict[str, int]:
    named: dict[str, int] = {}
    for item in at:
        env, _, step = item.rpartition("=")
        if not env or not step.isdigit():
            console.fail(f"--at {item!r}: write ENV=STEP, e.g. --at 17=6", code=2)
        named[env] = int(step)
    return named


def _named_in_base(console: Console, base: str, named: dict[str, int], channel: str) -> None:
    """Each ``--at ENV=STEP`` names an episode of BASE on ``channel`` (else it forks nothing)."""
    envs = _episodes_on(console, base, channel)
    shown = ", ".join(sorted(envs)[:10]) + (", ..." if len(envs) > 10 else "")
    for env, step in named.items():
        if env not in envs:
            console.fail(
                f"--at {env}={step}: {base} has no episode {env} on channel {channel} (it "
                f"holds {shown}); name one of those, as `cassette show {base}` lists them"
            )


def _episodes_on(console: Console, base: str, channel: str) -> set[str]:
    from .console import existing, load

    index = load(console, existing(console, base))
    envs = {str(env) for env, on, _ in index.entries if on == channel}
    if not envs:
        held = ", ".join(sorted({on for _, on, _ in index.entries})) or "none"
        console.fail(
            f"--channel {channel}: {base} holds no call on channel {channel} (it holds "
            f"{held}); pass --channel with one of those"
        )
    return envs
