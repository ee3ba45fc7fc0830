"""The browser the HTML report tests drive: optional on a developer's machine, required in CI.

Without Chromium the browser tests skip, naming the command that installs it; with
``CASSETTE_REQUIRE_BROWSER=1`` (``.ci/run`` sets it) they fail instead, so CI cannot go
green without having looked at the report in a real browser.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_VARIABLE = "CASSETTE_REQUIRE_BROWSER"
INSTALL = "apt-get update && apt-get install -y chromium"
NAMES = ("chromium", "chromium-browser")


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
