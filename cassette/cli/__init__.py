"""The ``cassette`` command: a click group with one command per module, as hatch does.

Each command module imports only click and :mod:`.console` at the top; the work (the diff
engine, rich, the openai SDK, tau2) is imported inside the command, when it runs.
``tau2`` is imported only when it is named (it needs the ``tau2`` extra).
"""

from __future__ import annotations

import click

from . import (
    convert,
    demo,
    diff,
    export,
    fork,
    import_,
    merge,
    redact,
    run,
    serve,
    show,
    stats,
    validate,
)
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


# the modules stay the package's attributes (cassette.cli.demo is the module, not the command)
_COMMANDS = (demo.demo, show.show, stats.stats, validate.validate, diff.diff, convert.convert)
for _command in (*_COMMANDS, redact.redact, merge.merge, run.run, fork.fork, serve.serve):
    main.add_command(_command)
for _command in (export.export, import_.import_command):
    main.add_command(_command)
main.lazy = {"tau2": "cassette.cli.tau2:tau2_command"}  # tau2-bench: `pip install -e '.[tau2]'`
