"""The ``cassette`` command: a click group, one small function per command, lazy imports."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

__all__ = ["main"]


class Console:
    """The one place that prints: rich on a terminal when installed, plain text otherwise."""

    def __init__(self) -> None:
        self._rich: Any = None
        try:
            from rich.console import Console as RichConsole
        except ImportError:
            return
        self._rich = RichConsole(highlight=False)

    def print(self, text: str = "", style: str | None = None) -> None:
        if self._rich is not None:
            self._rich.print(text, style=style, markup=False)
        else:
            click.echo(text)

    def fail(self, message: str, code: int = 2) -> NoReturn:
        click.echo(f"error: {message}", err=True)
        sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rollout-cassette")
def main() -> None:
    """Record the LLM calls of agent runs, replay them offline, diff two runs."""


@main.command()
@click.option(
    "--cassette",
    "path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Cassette to replay (default: the bundled fixtures/demo.jsonl).",
)
def demo(path: str | None) -> None:
    """Replay the bundled demo cassette offline and print what it holds.

    \b
    Example:
      cassette demo
    """
    import cassette
    from cassette.demo import fixtures_dir, run_agent

    console = Console()
    target = path or str(fixtures_dir() / "demo.jsonl")

    def no_network(request: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("replay must not call the model")

    try:
        with cassette.open(target, mode="replay") as cas:
            results = run_agent(cas, no_network)
            served = len(cas.index.entries) - len(cas.unused())
    except FileNotFoundError:
        console.fail(f"no cassette at {target}; pass --cassette PATH or run from a source checkout")
    except cassette.CassetteError as exc:
        console.fail(str(exc))
    console.print(f"replayed {target} offline: {served} model calls served, 0 live", "bold")
    for env_index, (messages, reward) in enumerate(results):
        console.print(f"\nepisode {env_index}  reward={reward:g}", "bold")
        for message in messages:
            calls = message.get("tool_calls") or []
            text = message.get("content") or ""
            for call in calls:
                fn = call["function"]
                text += f"{fn['name']}({fn['arguments']})"
            console.print(f"  {message['role']:>9}: {text}")


# --- inspection commands (show, stats, validate) --------------------------------------

# --- diff ---------------------------------------------------------------------------------

# --- conversion commands (convert, redact, merge, run) --------------------------------
