"""``cassette view``: look at runs in a browser, as one self-contained HTML page."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .console import Console, existing, overwritten, uploaded

if TYPE_CHECKING:
    from ..view import Run

__all__ = ["view"]

MAX_RUNS = 8


@click.command()
@click.argument("runs", metavar="RUN [RUN2 ...]", nargs=-1, required=True)
@click.option(
    "-o",
    "--output",
    "out",
    metavar="FILE.html",
    default=None,
    help="Write the page to this file (private, 0600) instead of serving it.",
)
@click.option("--port", type=int, default=0, show_default=True, help="0 picks a free port.")
@click.option("--no-browser", is_flag=True, help="Serve the page without opening a browser.")
def view(runs: tuple[str, ...], out: str | None, port: int, no_browser: bool) -> None:
    """Show runs in a browser: episodes, messages, tool and MCP calls, fork points.

    RUN is a cassette file, a shard directory or an fsspec URL. With two runs or more,
    episodes are paired by key and shown side by side, aligned by step, with the first
    divergence marked and the diff's statistics on top. The page is one file that contacts
    no other host; it shows what the cassettes hold as text, never runs it.

    \b
    Examples:
      cassette view runs/a.jsonl -o report.html
      cassette view runs/a.jsonl runs/b.jsonl
      cassette view s3://bucket/runs/a/ --no-browser --port 8800
    """
    from ..view import build_page, write_page

    console = Console()
    if len(runs) > MAX_RUNS:
        console.fail(f"{len(runs)} runs given; view at most {MAX_RUNS} at once")
    loaded = []
    for name in runs:
        loaded.append(_load(console, name))
        for message in loaded[-1].warnings:
            console.warn(message)
    text = build_page(loaded)
    if out is not None:
        target = overwritten(console, out)
        try:
            write_page(text, target)
        except OSError as exc:
            console.fail(f"cannot write {out}: {exc.strerror}; check the path")
        uploaded(console)
        console.print(f"wrote {out}")
        return
    _serve(console, text, port, no_browser)


def _load(console: Console, name: str) -> Run:
    """A run, as the other commands load one: one ``error:`` line for what cannot be read."""
    from ..errors import CassetteError
    from ..view import load_run

    path = existing(console, name)
    try:
        return load_run(path, name)
    except CassetteError as exc:
        console.fail(str(exc))
    except OSError as exc:
        console.fail(f"cannot read {name}: {exc.strerror}; check the path and its permissions")


def _serve(console: Console, text: str, port: int, no_browser: bool) -> None:
    import threading
    import webbrowser

    from ..view.server import PageServer

    try:
        server = PageServer(text, port).start()
    except OSError as exc:
        console.fail(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}); pick another --port")
    console.print(f"serving {server.url}  (Ctrl-C stops)")
    if not no_browser:
        webbrowser.open(server.url)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
