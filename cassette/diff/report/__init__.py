"""Renderers of a :class:`cassette.diff.RunDiff` or many runs: text, JSON, Markdown, HTML."""

from __future__ import annotations

import orjson

from ..many import ManyDiff
from ..types import RunDiff
from .html import render_html
from .many import render_many_html, render_many_markdown, render_many_text
from .markdown import render_markdown
from .text import render_text

__all__ = [
    "render_html",
    "render_json",
    "render_many_html",
    "render_many_json",
    "render_many_markdown",
    "render_many_text",
    "render_markdown",
    "render_text",
]


def render_json(diff: RunDiff | ManyDiff) -> str:
    """``to_dict()`` as indented JSON; ``cassette.diff.schema.SCHEMA`` is its JSON Schema."""
    return orjson.dumps(diff.to_dict(), option=orjson.OPT_INDENT_2).decode() + "\n"


render_many_json = render_json
