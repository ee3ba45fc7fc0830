"""The diff engine: compare two runs episode by episode, render the result.

:func:`diff_runs` (in :mod:`.run`) returns a :class:`RunDiff`; :mod:`.types` holds the
result records, :mod:`.rules` what is left out, :mod:`.compare` how two steps are
compared, and :mod:`.report` renders a :class:`RunDiff` as text, JSON, Markdown or HTML.
"""

from __future__ import annotations

from .compare import Channels, group_by_episode
from .rules import VOLATILE, Rules
from .run import diff_runs, parse_args, tool_calls_of
from .types import Divergence, EpisodeDiff, RunDiff, RunSummary, ToolCall

__all__ = [
    "VOLATILE",
    "Channels",
    "Divergence",
    "EpisodeDiff",
    "Rules",
    "RunDiff",
    "RunSummary",
    "ToolCall",
    "diff_runs",
    "group_by_episode",
    "parse_args",
    "tool_calls_of",
]
