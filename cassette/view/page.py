"""The self-contained HTML page of ``cassette view``: ``assets/`` and the runs' data in JSON
blocks (gzip + base64 when large; ``<``, ``>``, ``&`` escaped); its Content-Security-Policy
allows only its own script and style, and no connection."""

from __future__ import annotations

import base64
import gzip
import hashlib
import html
from importlib import resources
from typing import Any

import orjson

from .._version import __version__
from ..types import Json

__all__ = ["GROUP", "SMALL", "render_page"]

GROUP = 50  # episodes whose calls travel in one block (opened together)
SMALL = 32 * 1024  # a block of JSON past this many bytes is compressed


def _asset(name: str) -> str:
    return resources.files("cassette.view").joinpath("assets").joinpath(name).read_text("utf-8")


def _json(value: Any) -> bytes:
    data = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    return data.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")


def _block(block_id: str, value: Any) -> str:
    """One data block: JSON as it is when small, else gzip + base64."""
    data = _json(value)
    if len(data) <= SMALL:
        return f'<script type="application/json" id="{block_id}">{data.decode()}</script>'
    packed = base64.b64encode(gzip.compress(data, compresslevel=6, mtime=0)).decode()
    return f'<script type="application/json" id="{block_id}" data-gzip="1">{packed}</script>'


def render_page(runs: list[Json], details: list[list[list[Json]]], diff: Json | None) -> str:
    """The page of ``runs``, their ``details`` (per run, per episode, the calls) and ``diff``."""
    script, style = _asset("view.js"), _asset("view.css")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = (
        "default-src 'none'; "
        f"script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:"
    )
    index = {"runs": runs, "diff": diff, "group": GROUP, "version": __version__}
    blocks = [_block("index", index)]
    for r, episodes in enumerate(details):
        for g in range(0, len(episodes), GROUP):
            blocks.append(_block(f"calls-{r}-{g // GROUP}", episodes[g : g + GROUP]))
    title = html.escape("cassette view: " + ", ".join(str(run["name"]) for run in runs))
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{csp}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            '<meta name="referrer" content="no-referrer">',
            f"<title>{title}</title>",
            f"<style>{style}</style>",
            "</head><body>",
            '<div id="app" aria-live="polite">Loading…</div>',
            *blocks,
            f"<script>{script}</script>",
            "</body></html>",
            "",
        ]
    )
