"""Compare two runs episode by episode: :func:`diff_runs` returns a :class:`RunDiff`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..dataset.inspect import number, parse_args, response_calls, usage_totals
from ..storage.gc import paused_gc
from ..storage.index import Entry, Index, load_index
from ..types import EnvIndex
from .align import align_calls
from .causes import classify, group_causes
from .compare import Channels, Comparer, divergence, group_by_episode, in_file_order, take_forks
from .rules import Rules
from .stats import paired_stats
from .types import Cause, Divergence, EpisodeDiff, Json, RunDiff, RunSummary, ToolCall

__all__ = ["diff_runs", "parse_args", "tool_calls_of"]

Progress = Callable[[int, int], None]


def tool_calls_of(entry: Entry) -> list[ToolCall]:
    """The tool calls of a response (chat, Responses API or stream), arguments parsed."""
    calls = response_calls(entry.response)
    return [ToolCall(entry.channel, entry.step, name, args) for name, args in calls]


def _load(run: str | os.PathLike[str] | Index, default: str) -> tuple[Index, str]:
    if isinstance(run, Index):
        return run, default
    return load_index([Path(run)]), str(run)  # a missing path: CassettePathError


def _sort_key(env: EnvIndex) -> tuple[bool, Any]:
    if isinstance(env, int):
        return (False, env)
    parts = re.split(r"(\d+)", env)
    return (True, [int(p) if i % 2 else p for i, p in enumerate(parts)])


def _wanted(env: EnvIndex) -> list[EnvIndex]:
    digits = isinstance(env, str) and re.fullmatch(r"-?\d+", env) is not None
    return [env, int(env)] if digits else [env]


def _select(envs: list[EnvIndex], env: EnvIndex) -> EnvIndex:
    """The episode ``env`` names (a digit string matches an int env_index)."""
    keys = {(type(e), e) for e in envs}
    for want in _wanted(env):
        if (type(want), want) in keys:
            return want
    shown = ", ".join(map(repr, envs[:8])) + (", …" if len(envs) > 8 else "")
    raise ValueError(
        f"episode {env!r} is in neither run (episodes: {shown or 'none'}); pick one of those"
    )


class _Side:
    """One run's steps of an episode, by channel, and its outcome."""

    def __init__(self, channels: Channels | None, outcome: Json | None) -> None:
        self.channels, self.outcome = channels or {}, outcome
        self.present = channels is not None or outcome is not None
        self.reward = number((outcome or {}).get("reward"))
        self.entries = [e for steps in self.channels.values() for e in steps.values()]

    def calls(self) -> list[ToolCall]:
        return [call for entry in in_file_order(self.entries) for call in tool_calls_of(entry)]

    def full(self, comparer: Comparer, channel: str, step: int) -> Json | None:
        entry = self.channels.get(channel, {}).get(step)
        return comparer.full(entry) if entry is not None else None

    def outcome_view(self) -> Json:
        o = self.outcome
        return {"outcome": None if o is None else {k: o.get(k) for k in ("reward", "terminated")}}


def _add_usage(run: RunSummary, entry: Entry) -> None:
    prompt, completion, total, cost = usage_totals(entry)
    run.interactions += 1
    run.prompt_tokens += int(prompt)
    run.completion_tokens += int(completion)
    run.total_tokens += int(total or prompt + completion)
    run.cost = run.cost if cost is None else (run.cost or 0.0) + cost


def _summary(label: str, sides: Iterable[_Side]) -> RunSummary:
    present = [side for side in sides if side.present]
    rewards = [side.reward for side in present if side.reward is not None]
    mean = sum(rewards) / len(rewards) if rewards else None
    run = RunSummary(label, len(present), rewarded=len(rewards), mean_reward=mean)
    for side in present:
        for entry in side.entries:
            _add_usage(run, entry)
    run.cost = round(run.cost, 10) if run.cost is not None else None
    return run


def _episode_diff(
    env: EnvIndex, comparer: Comparer, a: _Side, b: _Side, fork: Json | None
) -> EpisodeDiff:
    ep = EpisodeDiff(env, "identical", None, a.reward, b.reward, len(a.entries), len(b.entries))
    ep.fork = fork
    if not (a.present and b.present):
        ep.status = "only_a" if a.present else "only_b"
        ep.tool_calls_a, ep.tool_calls_b = a.calls(), b.calls()
        return ep
    ep.divergence = comparer.episode(a.channels, b.channels) or _by_outcome(comparer, a, b)
    if ep.divergence is not None:
        ep.status, ep.cause = "diverged", _cause(ep.divergence, comparer, a, b)
        ep.tool_calls_a, ep.tool_calls_b = a.calls(), b.calls()
        ep.alignment = align_calls(ep.tool_calls_a, ep.tool_calls_b)
    return ep


def _by_outcome(comparer: Comparer, a: _Side, b: _Side) -> Divergence | None:
    wa, wb = comparer.rules.norm(a.outcome_view()), comparer.rules.norm(b.outcome_view())
    return None if wa == wb else divergence(None, None, "outcome", wa, wb)


def _cause(d: Divergence, comparer: Comparer, a: _Side, b: _Side) -> Cause:
    if d.part not in ("request", "response") or d.channel is None or d.step is None:
        return classify(d)
    fulls = a.full(comparer, d.channel, d.step), b.full(comparer, d.channel, d.step)
    comparer.forget()
    return classify(d, *fulls)


def _report(progress: Progress | None, done: int, total: int) -> None:
    """Call ``progress`` about 200 times over a diff."""
    if progress is not None and (done % max(1, total // 200) == 0 or done == total):
        progress(done, total)


def diff_runs(
    a: str | os.PathLike[str] | Index,
    b: str | os.PathLike[str] | Index,
    *,
    ignore: Iterable[str] = (),
    env: EnvIndex | None = None,
    progress: Progress | None = None,
    labels: tuple[str, str] | None = None,
    seed: int = 0,
) -> RunDiff:
    """Diff run ``a`` against run ``b`` (paths of files or shard directories, or indexes).

    ``ignore`` adds paths to leave out (``"response.choices[*].message.content"``,
    ``"temperature"`` for a request key, ``"**.timestamp"``); ``env`` limits the diff to
    one episode (a digit string matches an int env_index); ``progress(done, total)`` is
    called as episodes are compared; ``labels`` name the runs (default: their paths, or
    "A" and "B" for indexes); ``seed`` seeds the bootstrap and Monte Carlo statistics.
    Raises ValueError for a malformed ignore path or an episode that neither run holds.
    """
    rules = Rules(ignore)
    with paused_gc():
        (ia, la), (ib, lb) = _load(a, "A"), _load(b, "B")
        la, lb = labels or (la, lb)
        groups = group_by_episode(ia), group_by_episode(ib)
        forks = take_forks(groups[0]) | take_forks(groups[1])  # not calls: shown per episode
        envs = sorted({*groups[0], *groups[1], *ia.outcomes, *ib.outcomes}, key=_sort_key)
        envs = [_select(envs, env)] if env is not None else envs
        sides_a = [_Side(groups[0].get(e), ia.outcomes.get(e)) for e in envs]
        sides_b = [_Side(groups[1].get(e), ib.outcomes.get(e)) for e in envs]
        comparer, episodes = Comparer(rules), []
        for done, (e, sa, sb) in enumerate(zip(envs, sides_a, sides_b, strict=True), 1):
            episodes.append(_episode_diff(e, comparer, sa, sb, forks.get(e)))
            _report(progress, done, len(envs))
    return RunDiff(
        a=_summary(la, sides_a),
        b=_summary(lb, sides_b),
        episodes=episodes,
        ignored=rules.listed(),
        volatile_seen=sorted(comparer.volatile_seen),
        stats=paired_stats(episodes, seed=seed),
        causes=group_causes(episodes),
        steps=groups,
    )
