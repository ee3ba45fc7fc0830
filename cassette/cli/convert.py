"""``cassette convert``: an eval-protocol playback file into a cassette."""

from __future__ import annotations

import click

from .console import Console, existing, plural, uploaded, working, writable

__all__ = ["convert"]


@click.command()
@click.option(
    "--from",
    "source",
    type=click.Choice(["ep"]),
    required=True,
    help="The input's format: ep = an eval-protocol playback file (EP_PLAYBACK_FILE).",
)
@click.argument("src", metavar="IN")
@click.argument("out", metavar="OUT")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def convert(source: str, src: str, out: str, force: bool) -> None:
    """Turn an eval-protocol playback file into a cassette.

    Each line (env_index, step, messages) becomes one interaction: its request the
    messages before the last assistant message, its response that message. Written by the
    recorder, so OUT is delta-encoded and redacted like any recording.

    \b
    Examples:
      cassette convert --from ep playback.jsonl runs/ep.jsonl
    """
    from ..dataset.convert import from_eval_protocol

    console = Console()
    path = existing(console, src)
    target = writable(console, out, force)
    with working(console, f"converting {path.name}", [path]) as advance:
        index = from_eval_protocol(path, target, progress=advance)
    uploaded(console)
    counts = (
        f"{plural(len(index.entries), 'interaction')}, {plural(len(index.episodes()), 'episode')}"
    )
    console.print(f"converted {src} to {out}: {counts}")
