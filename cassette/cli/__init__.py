"""The ``cassette`` command: a click group whose commands' modules are imported when used."""

from __future__ import annotations

import click

from .console import Console
from .group import OneLineGroup

__all__ = ["Console", "main"]


@click.group(
    name="cassette", cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour the output (default: on a terminal, unless NO_COLOR is set). "
    "JSON output is never coloured.",
)
@click.version_option(package_name="rollout-cassette")
def main(color: bool | None) -> None:
    """Record the LLM calls of agent runs, replay them offline, diff two runs.

    \b
    Examples:
      cassette show runs/a.jsonl --env 0
      cassette stats runs/a.jsonl --format json
      cassette validate runs/a.jsonl
      cassette run --mode replay --cassette runs/a.jsonl -- pytest -q
    """


_SAME = ("convert", "demo", "diff", "export", "fork", "merge", "redact", "run", "serve", "show",
         "stats", "validate", "view")  # fmt: skip
main.lazy = {name: f"cassette.cli.{name}:{name}" for name in _SAME}
main.lazy |= {"import": "cassette.cli.import_:import_command"}
main.lazy |= {"tau2": "cassette.cli.tau2:tau2_command"}  # `pip install 'rollout-cassette[tau2]'`
