"""The screenshots README and the docs show, made by a script rather than by hand: the
MCP example agent recorded twice (the model server scripted, then random), shown by
``cassette view`` at 1280 and 390 pixels wide and by ``cassette diff --html`` in headless
Chromium, and the terminal output of ``cassette diff`` and ``cassette show`` on those two
runs, as SVG (rich's recorded console, 100 columns).

    python bench/screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cassette.view import build_page, load_run, write_page
from fixtures.cdp import HEADLESS, Browser
from fixtures.mcp_agent import record_agent

ROOT = Path(__file__).resolve().parents[1]
SHOTS = [  # (file, width, height, what the address shows)
    ("view-run-1280.png", 1280, 900, ""),
    ("view-episode-1280.png", 1280, 1100, "#run=0&episode=1"),
    ("view-episode-390.png", 390, 1100, "#run=0&episode=1"),
]
TERMINAL = [  # (file, the command's arguments, the window's title)
    ("diff-terminal.svg", ["diff", "runs/scripted.jsonl", "runs/random.jsonl", "--env", "1"],
     "cassette diff runs/scripted.jsonl runs/random.jsonl --env 1"),
    ("show-terminal.svg", ["show", "runs/scripted.jsonl", "--env", "1"],
     "cassette show runs/scripted.jsonl --env 1"),
]  # fmt: skip
COLUMNS = 100


def cassette_command(args: list[str], cwd: Path) -> str:
    """The coloured output of ``cassette ARGS`` run in ``cwd`` (exit 1, "the runs differ",
    is an answer, not a failure)."""
    env = {**os.environ, "COLUMNS": str(COLUMNS), "PYTHONPATH": str(ROOT)}
    env.pop("NO_COLOR", None)
    done = subprocess.run(
        [sys.executable, "-m", "cassette", "--color", *args],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode not in (0, 1):
        raise SystemExit(f"cassette {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def terminal_svg(output: str, title: str, path: Path) -> None:
    """``output`` (with its ANSI colours) as an SVG of a terminal window."""
    from rich.console import Console
    from rich.text import Text

    console = Console(record=True, width=COLUMNS, file=io.StringIO(), force_terminal=True)
    console.print(Text.from_ansi(output.rstrip("\n")))
    console.save_svg(str(path), title=title)


def report_png(report: Path, path: Path, width: int = 1280, height: int = 1000) -> None:
    """The HTML diff report, as Chromium's own ``--screenshot`` takes it (the report is a
    static page: no ``data-ready`` to wait for, as :class:`Browser` does)."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("Chromium is not installed; apt-get install -y chromium")
    with tempfile.TemporaryDirectory(prefix="screenshots-profile-") as profile:
        subprocess.run(
            [exe, *HEADLESS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             "--hide-scrollbars", "--virtual-time-budget=5000", f"--screenshot={path}",
             report.as_uri()],
            check=True, capture_output=True,
        )  # fmt: skip
    print(f"wrote {path}")


def screenshot(page: Path, out: Path, shot: tuple[str, int, int, str]) -> None:
    name, width, height, where = shot
    with Browser(width=width, height=height) as browser:
        tab = browser.open(page.as_uri() + where, width=width, height=height)
        if where:
            tab.wait("document.getElementById('calls')")
            tab.eval("window.scrollTo(0, 0)")
        tab.screenshot(str(out / name))
    print(f"wrote {out / name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="screenshots-"))
    (work / "runs").mkdir()
    runs = [record_agent(work / "runs" / "scripted.jsonl", "script"),
            record_agent(work / "runs" / "random.jsonl", "random")]  # fmt: skip
    page = work / "view.html"
    write_page(build_page([load_run(r, f"runs/{r.name}") for r in runs]), page)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, command, title in TERMINAL:
        terminal_svg(cassette_command(command, work), title, args.out / name)
        print(f"wrote {args.out / name}")
    cassette_command(["diff", *(f"runs/{r.name}" for r in runs), "--html", "report.html"], work)
    report_png(work / "report.html", args.out / "diff-report-1280.png")
    for shot in SHOTS:
        screenshot(page, args.out, shot)


if __name__ == "__main__":
    main()
