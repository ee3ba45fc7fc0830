"""``cassette merge``: shard directories or runs into one cassette."""

from __future__ import annotations

from typing import Any

import click

from .console import Console, existing, plural, uploaded, working, writable

__all__ = ["merge"]


@click.command()
@click.argument("out", metavar="OUT")
@click.argument("inputs", metavar="IN...", nargs=-1, required=True)
@click.option(
    "--on-conflict",
    type=click.Choice(["error", "first", "last", "renumber"]),
    default="error",
    show_default=True,
    help="When two inputs hold the same key: error; keep the episode from the first or "
    "last input that holds it; or renumber every env_index as <input stem>/<env_index>. "
    "A key recorded twice within one input keeps its first line unless this is error.",
)
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists (it may be an input).")
def merge(out: str, inputs: tuple[str, ...], on_conflict: str, force: bool) -> None:
    """Merge shard directories or runs into one cassette.

    Full requests are rebuilt and recorded again (so the deltas of OUT are valid);
    hashes, responses and meta are kept.

    \b
    Examples:
      cassette merge runs/all.jsonl runs/shards/
      cassette merge both.jsonl a.jsonl b.jsonl --on-conflict renumber   # "a/0", "b/0"
    """
    from ..dataset.convert import merge

    console = Console()
    paths = [existing(console, path) for path in inputs]
    target = writable(console, out, force)
    with working(console, "merging", paths) as advance:  # a MergeConflict: one error line
        merged = merge(target, paths, on_conflict=on_conflict, progress=advance)
    uploaded(console)
    counts = f"{plural(merged.interactions, 'interaction')}, {plural(merged.outcomes, 'outcome')}"
    console.print(f"merged {plural(len(paths), 'input')} into {out}: {counts}, "
                  f"{plural(merged.episodes, 'episode')}")  # fmt: skip
    _print_left_out(console, merged, on_conflict)


def _print_left_out(console: Console, merged: Any, on_conflict: str) -> None:
    for env, source in merged.dropped:
        console.print(f"  dropped episode {env!r} of {source} (--on-conflict {on_conflict})")
    for source, prefix in merged.prefixes.items():
        console.print(f"  episodes of {source} are now {prefix}/<env_index>")
    if merged.repeats:
        repeats = plural(merged.repeats, "repeated line")
        console.print(f"  left out {repeats} of keys recorded twice (kept the first of each)")
    for where in merged.unusable:
        console.print(f"  left out {where}")
