"""The screenshots README and the docs show, made by a script rather than by hand: the
MCP example agent recorded twice (the model server scripted, then random), shown by
``cassette view`` at 1280 and 390 pixels wide, in headless Chromium.

    python bench/screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cassette
from cassette.testing.mcp_server import stdio_params
from cassette.testing.server import ScriptedServer
from cassette.view import build_page, load_run, write_page
from fixtures.cdp import Browser
from fixtures.mcp_agent import run_agent

SHOTS = [  # (file, width, height, what the address shows)
    ("view-run-1280.png", 1280, 900, ""),
    ("view-episode-1280.png", 1280, 1100, "#run=0&episode=1"),
    ("view-episode-390.png", 390, 1100, "#run=0&episode=1"),
]


def record(path: Path, mode: str) -> Path:
    async def main() -> None:
        with ScriptedServer(mode=mode) as model, cassette.open(path, "record") as cas:
            await run_agent(cas, cas, model.base_url, stdio_params())

    asyncio.run(main())
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="screenshots-"))
    runs = [record(work / "scripted.jsonl", "script"), record(work / "random.jsonl", "random")]
    page = work / "view.html"
    write_page(build_page([load_run(r, f"runs/{r.name}") for r in runs]), page)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, width, height, where in SHOTS:
        with Browser(width=width, height=height) as browser:
            tab = browser.open(page.as_uri() + where, width=width, height=height)
            if where:
                tab.wait("document.getElementById('calls')")
                tab.eval("window.scrollTo(0, 0)")
            tab.screenshot(str(args.out / name))
        print(f"wrote {args.out / name}")


if __name__ == "__main__":
    main()
