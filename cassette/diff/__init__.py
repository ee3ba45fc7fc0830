"""The diff engine: :func:`diff_runs` compares two runs into a :class:`RunDiff`,
:func:`diff_many` many runs against one; :mod:`.report` renders them."""

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
