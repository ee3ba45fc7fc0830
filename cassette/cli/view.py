"""``cassette view``: look at runs in a browser, as one self-contained HTML page."""

from __future__ import annotations

import click

from .console import PORT, Console, existing, overwritten, uploaded

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
@click.option("--port", type=PORT, default=0, show_default=True, help="0 picks a free port.")
@click.option("--no-browser", is_flag=True, help="Serve the page without opening a browser.")
def view(runs: tuple[str, ...], out: str | None, port: int, no_browser: bool) -> None:
    """Show runs in a browser: episodes, messages, tool and MCP calls, fork points.

    RUN is a cassette file, a shard directory or an fsspec URL (a folder of cassettes of
    different runs shows each as a run). With two runs or more,
    episodes are paired by key and shown side by side, aligned by step, with the first
    divergence marked and the diff's statistics on top. The page is one file that contacts
    no other host; it shows what the cassettes hold as text, never runs it.

    \b
    Examples:
      cassette view runs/a.jsonl -o report.html
      cassette view runs/a.jsonl runs/b.jsonl
      cassette view s3://bucket/runs/a/ --no-browser --port 8800
    """
    from ..view import build_page, load_runs, write_page

    console = Console()
    loaded = [run for name in runs for run in load_runs(existing(console, name), name)]
    if len(loaded) > MAX_RUNS:
        console.fail(f"{len(loaded)} runs given; view at most {MAX_RUNS} at once")
    for message in (m for run in loaded for m in run.warnings):
        console.warn(message)
    text = build_page(loaded)
    if out is not None:
        write_page(text, overwritten(console, out))
        uploaded(console)
        console.print(f"wrote {out}")
        return
    _serve(console, text, port, no_browser)


def _serve(console: Console, text: str, port: int, no_browser: bool) -> None:
    import contextlib
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
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops it
        threading.Event().wait()
    server.stop()
