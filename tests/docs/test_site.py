"""The documentation site builds with ``mkdocs build --strict`` (a broken link, a page
missing from the nav or a nav entry with no page fails it), its generated CLI reference
holds every command, and README.md's links lead to files of the checkout."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest

from cassette.cli import main
from tests.helpers.docblocks import REPO

PLUGINS = ("mkdocs", "material", "mkdocstrings_handlers.python", "mkdocs_click")


def _missing() -> list[str]:
    return [name for name in PLUGINS if importlib.util.find_spec(name.split(".")[0]) is None]


@pytest.mark.skipif(bool(_missing()), reason="the docs extra: pip install -e '.[docs]'")
def test_the_site_builds_strict_with_every_command(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    names = main.list_commands(click.Context(main))
    missing = [n for n in names if f"cassette {n} [OPTIONS]" not in cli]
    assert missing == []


def test_the_readmes_links_lead_to_files() -> None:
    text = (REPO / "README.md").read_text()
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link and not link.startswith("mailto:")]
    assert local, "the README links to its pages"
    assert [link for link in local if not (REPO / link).exists()] == []
