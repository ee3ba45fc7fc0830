"""``cassette convert``: an eval-protocol playback file into a cassette."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import CassetteError
from .console import Console, existing, large_bytes, plural, size, uploaded, working, writable

__all__ = ["convert", "convert_command"]


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
      cassette show runs/ep.jsonl
    """
    console = Console()
    path = existing(console, src)
    target = writable(console, out, force)
    convert_command(console, path, target, src, out, large=large_bytes())


def convert_command(
    console: Console, path: Path, target: Path, src: str, out: str, *, large: int
) -> None:
    """Convert the eval-protocol playback file ``path`` (given as ``src``) into ``target``
    (given as ``out``) and say how many interactions and episodes it wrote."""
    from ..dataset.convert import from_eval_protocol

    big = size(path) >= large
    try:
        with working(console, f"converting {path.name}", show=big) as advance:
            index = from_eval_protocol(path, target, progress=advance)
    except CassetteError as exc:
        console.fail(str(exc))
    counts = (
        f"{plural(len(index.entries), 'interaction')}, {plural(len(index.episodes()), 'episode')}"
    )
    uploaded(console)
    console.print(f"converted {src} to {out}: {counts}")
