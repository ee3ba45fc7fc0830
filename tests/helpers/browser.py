"""The browser the HTML report tests drive: optional on a developer's machine, required in CI;
running it headless and reading the DOM it printed.

Without Chromium the browser tests skip, naming the command that installs it; with
``CASSETTE_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) they fail instead, so CI cannot go
green without having looked at the report in a real browser.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fixtures.cdp import HEADLESS

REQUIRE_VARIABLE = "CASSETTE_REQUIRE_BROWSER"
INSTALL = "apt-get update && apt-get install -y chromium"
NAMES = ("chromium", "chromium-browser")
__all__ = ["Dom", "browser_required", "chromium", "chromium_executable"]


def browser_required() -> bool:
    return os.environ.get(REQUIRE_VARIABLE, "").strip().lower() not in ("", "0", "false", "no")


def chromium_executable() -> str:
    """Chromium's path; else the test skips (or fails where a browser is required)."""
    for name in NAMES:
        exe = shutil.which(name)
        if exe:
            return exe
    reason = (
        "Chromium is not installed (optional: the HTML report is tested in a real browser); "
        f"install it with `{INSTALL}` (Debian's package)"
    )
    if browser_required():
        pytest.fail(f"{reason}; {REQUIRE_VARIABLE} is set, so its absence fails", pytrace=False)
    pytest.skip(reason)


FLAGS = HEADLESS


def chromium(tmp_path: Path, *args: str) -> str:
    """Run headless Chromium with a fresh profile; return what it printed on stdout."""
    exe = chromium_executable()  # skips without Chromium, fails if CI requires it
    profile = tmp_path / "chromium-profile"
    cmd = [exe, *FLAGS, f"--user-data-dir={profile}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class Dom(HTMLParser):
    """Elements by id (tag, attributes, text inside) and the episode table's row order."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.by_id: dict[str, tuple[str, dict[str, str], list[str]]] = {}
        self.rows: list[str] = []
        self.attrs_of: dict[str, dict[str, str]] = {}
        self._open: list[tuple[str, list[str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.attrs_of.setdefault(tag, a)
        if tag == "tr" and "data-env" in a:
            self.rows.append(a["data-env"])
        texts: list[str] = []
        if "id" in a:
            self.by_id[a["id"]] = (tag, a, texts)
            self._open.append((tag, texts))
        elif self._open and tag == self._open[-1][0]:
            self._open.append((tag, self._open[-1][1]))

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        for texts in {id(texts): texts for _, texts in self._open}.values():
            texts.append(data)

    def text(self, ident: str) -> str:
        return " ".join("".join(self.by_id[ident][2]).split())

    def classes(self, ident: str) -> list[str]:
        return self.by_id[ident][1].get("class", "").split()
