"""The Markdown report's statistics, causes, noise floor and aligned calls, and fitting
the whole comment under GitHub's 65,536-character limit."""

from __future__ import annotations

from collections.abc import Callable

from ..types import EpisodeDiff, RunDiff
from .analysis import aligned_rows, cause_lines, noise_rows, pass_k_rows, stats_rows
from .common import MINUS

__all__ = ["COMMENT_LIMIT", "aligned_table", "analysis_lines", "cell", "code", "fit"]

COMMENT_LIMIT = 65_536  # GitHub's limit on a comment body, in characters


def code(text: str) -> str:
    """``text`` as an inline code span that survives backticks and table pipes."""
    text = text.replace("\n", " ").replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def analysis_lines(diff: RunDiff) -> list[str]:
    """Statistics (and pass^k), grouped causes, and the noise floor."""
    out = ["", "### Statistics", "", "| paired by env_index | |", "|---|---|"]
    for label, value in stats_rows(diff.stats):
        value = f"**{cell(value)}**" if label == "verdict" else cell(value)
        out.append(f"| {cell(label)} | {value} |")
    pk = pass_k_rows(diff.stats)
    if pk and diff.stats is not None:
        out += ["", f"| {diff.stats.tasks} tasks | A | B | B {MINUS} A |", "|---|---:|---:|---:|"]
        out += [f"| {k} | {a} | {b} | {d} |" for k, a, b, d in pk]
    causes = cause_lines(diff)
    if causes:
        out += ["", "### Why episodes diverged", ""]
        out += [
            f"- **{text}**" + (f" (e.g. {code(path)})" if path else "") for text, path in causes
        ]
    rows = noise_rows(diff.noise)
    if rows and diff.noise is not None:
        out += ["", f"### Noise floor: A vs B against A vs {code(diff.noise.baseline)}", ""]
        out += ["| metric | A vs B | A vs A2 | |", "|---|---:|---:|---|"]
        for metric, observed, noise, word in rows:
            word = f"**{word}**" if word == "exceeds noise" else word
            out.append(f"| {cell(metric)} | {observed} | {noise} | {word} |")
    return out


def aligned_table(ep: EpisodeDiff) -> list[str]:
    """The tool calls aligned, as a table: = same, ~ changed, minus only in A, + only in B."""
    if not ep.alignment:
        return []
    out = ["", "| | A | B |", "|:-:|---|---|"]
    for mark, a, b in aligned_rows(ep, width=70):
        left = code(a) if a and not a.startswith("… ") else cell(a)
        out.append(f"| {mark} | {left} | {code(b) if b else ''} |")
    return out


def fit(render: Callable[[int], str], limit: int, budget: int = COMMENT_LIMIT) -> str:
    """The report rendered with at most ``limit`` episodes a section, fewer until it fits
    in ``budget`` characters; if even none fit, cut at a line with a note."""
    for n in (limit, 10, 5, 2, 0):
        if n > limit:
            continue
        text = render(n)
        if len(text) <= budget:
            return text
    note = "\n\n… (cut to fit a GitHub comment; run `cassette diff --format json` for all)\n"
    cut = text[: budget - len(note)]
    return cut[: cut.rfind("\n")] + note
