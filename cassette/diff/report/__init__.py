"""Renderers of a :class:`cassette.diff.RunDiff`: text, JSON, Markdown, one HTML file."""

from __future__ import annotations

from .html import render_html
from .json_report import render_json
from .many import render_many_html, render_many_json, render_many_markdown, render_many_text
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
