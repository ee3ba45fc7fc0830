"""The diff engine: compare two runs episode by episode, render the result.

:func:`diff_runs` (in :mod:`.run`) returns a :class:`RunDiff`; :mod:`.types` holds the
result records, :mod:`.rules` what is left out, :mod:`.compare` how two steps are
compared (and the fork points of a run made by :func:`cassette.replay.fork`),
:mod:`.stats` / :mod:`.align` / :mod:`.causes` the paired statistics, aligned tool calls
and grouped causes, :mod:`.many` many runs against one and the noise floor, and
:mod:`.report` renders a :class:`RunDiff` as text, JSON, Markdown or HTML.
"""

from __future__ import annotations

from .align import AlignedCall, align_calls
from .causes import CauseGroup
from .compare import Channels, group_by_episode
from .many import ManyDiff, diff_many
from .rules import VOLATILE, Rules
from .run import diff_runs, parse_args, tool_calls_of
from .stats import PairedStats, PassK, Significance
from .types import Divergence, EpisodeDiff, NoiseFloor, NoiseMetric, RunDiff, RunSummary, ToolCall

__all__ = [
    "VOLATILE",
    "AlignedCall",
    "CauseGroup",
    "Channels",
    "Divergence",
    "EpisodeDiff",
    "ManyDiff",
    "NoiseFloor",
    "NoiseMetric",
    "PairedStats",
    "PassK",
    "Rules",
    "RunDiff",
    "RunSummary",
    "Significance",
    "ToolCall",
    "align_calls",
    "diff_many",
    "diff_runs",
    "group_by_episode",
    "parse_args",
    "tool_calls_of",
]
