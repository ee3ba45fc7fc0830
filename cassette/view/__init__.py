"""``cassette view``: one self-contained HTML page that shows runs (their episodes,
messages, tool and MCP calls, fork points, errors) and, for two runs or more, their
episodes side by side with the diff's first divergence and paired statistics.

:func:`build_page` makes the page's text from loaded runs; :func:`write_page` writes it
privately (0600: it holds transcripts); :mod:`.server` serves it on 127.0.0.1.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..storage.index import Index
from ..types import Json
from .model import run_summary
from .page import render_page

__all__ = ["build_page", "write_page"]

_HEAVY = ("tool_calls_a", "tool_calls_b", "alignment")  # shown from the calls themselves


def _diff(a: tuple[Index, str], b: tuple[Index, str]) -> Json:
    from ..diff import diff_runs

    data = diff_runs(a[0], b[0], labels=(a[1], b[1])).to_dict()
    for episode in data["episodes"]:
        for key in _HEAVY:
            episode.pop(key, None)
    return data


def build_page(runs: list[tuple[Index, str]], warnings: list[list[str]] | None = None) -> str:
    """The page of ``runs`` ((index, name) each; the first two are diffed), with each run's
    ``warnings`` (what loading it reported) shown at its top."""
    summaries, details = [], []
    for i, (index, name) in enumerate(runs):
        summary, calls = run_summary(index, name)
        summary["warnings"] = (warnings or [])[i] if i < len(warnings or []) else []
        summaries.append(summary)
        details.append(calls)
    diff = _diff(runs[0], runs[1]) if len(runs) >= 2 else None
    return render_page(summaries, details, diff)


def write_page(text: str, path: Path) -> None:
    """Write the page privately (0600), replacing ``path`` whole."""
    side = path.with_name(f".{path.name}.{os.getpid()}.part")
    fd = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(side, path)
