"""Compare two runs episode by episode: alignment, first divergence, reward deltas.

Pure data, no printing: :func:`diff_runs` returns a :class:`RunDiff` that the renderers in
:mod:`cassette.diff.report` turn into text, JSON, Markdown or HTML.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..dataset.inspect import parse_args, response_calls, usage_totals
from ..storage.gc import paused_gc
from ..storage.index import Entry, Index, load_index
from ..types import EnvIndex
from .align import align_calls
from .causes import classify, group_causes
from .compare import Channels, Comparer, divergence, group_by_episode, take_forks
from .rules import Rules
from .stats import paired_stats
from .types import Divergence, EpisodeDiff, Json, RunDiff, RunSummary, ToolCall

__all__ = ["diff_runs", "parse_args", "tool_calls_of"]

Progress = Callable[[int, int], None]


def tool_calls_of(entry: Entry) -> list[ToolCall]:
    """The tool calls in a response: chat ``choices[0].message.tool_calls``, Responses API
    ``output`` items of type ``function_call``, a stream's assembled ``message``."""
    calls = response_calls(entry.response)
    return [ToolCall(entry.channel, entry.step, name, args) for name, args in calls]


def _tally(run: RunSummary, channels: Channels | None, outcome: Json | None) -> None:
    if channels is None and outcome is None:
        return
    run.episodes += 1
    reward = (outcome or {}).get("reward")
    if isinstance(reward, (int, float)) and not isinstance(reward, bool):
        run.rewarded += 1
        run.mean_reward = (run.mean_reward or 0.0) + reward  # a sum until _finish
    totals = [usage_totals(e) for steps in (channels or {}).values() for e in steps.values()]
    run.interactions += len(totals)
    run.prompt_tokens += int(sum(t[0] for t in totals))
    run.completion_tokens += int(sum(t[1] for t in totals))
    run.total_tokens += int(sum(t[2] or t[0] + t[1] for t in totals))
    costs = [t[3] for t in totals if t[3] is not None]
    if costs:
        run.cost = (run.cost or 0.0) + sum(costs)


def _finish(run: RunSummary) -> None:
    if run.rewarded and run.mean_reward is not None:
        run.mean_reward /= run.rewarded
    if run.cost is not None:
        run.cost = round(run.cost, 10)


def _load(run: str | os.PathLike[str] | Index, default: str) -> tuple[Index, str]:
    if isinstance(run, Index):
        return run, default
    return load_index([Path(run)]), str(run)  # a missing path: CassettePathError


def _sort_key(env: EnvIndex) -> tuple[bool, Any]:
    if isinstance(env, int):
        return (False, env)
    parts = re.split(r"(\d+)", env)
    return (True, [int(p) if i % 2 else p for i, p in enumerate(parts)])


def _select(envs: list[EnvIndex], env: EnvIndex) -> EnvIndex:
    for cand in envs:
        if cand == env and type(cand) is type(env):
            return cand
    if isinstance(env, str) and re.fullmatch(r"-?\d+", env) and int(env) in envs:
        return int(env)
    shown = ", ".join(repr(e) for e in envs[:8]) + (", …" if len(envs) > 8 else "")
    raise ValueError(
        f"episode {env!r} is in neither run (episodes: {shown or 'none'}); pick one of those"
    )


def _outcome_view(outcome: Json | None) -> Json | None:
    if outcome is None:
        return None
    return {"reward": outcome.get("reward"), "terminated": outcome.get("terminated")}


def _episode_diff(
    env: EnvIndex, comparer: Comparer, sides: tuple[Any, Any, Any, Any]
) -> EpisodeDiff:
    ga, gb, oa, ob = sides
    in_a, in_b = ga is not None or oa is not None, gb is not None or ob is not None
    ep = EpisodeDiff(env, "only_b" if not in_a else "only_a" if not in_b else "identical")
    ep.reward_a, ep.reward_b = (oa or {}).get("reward"), (ob or {}).get("reward")
    ep.steps_a, ep.steps_b = _steps(ga), _steps(gb)
    if in_a and in_b:
        ep.divergence = comparer.episode(ga or {}, gb or {}) or _by_outcome(comparer, oa, ob)
        ep.status = "identical" if ep.divergence is None else "diverged"
    if ep.status != "identical":
        ep.tool_calls_a, ep.tool_calls_b = _calls(ga), _calls(gb)
    if ep.divergence is not None:
        ep.cause = _cause(ep.divergence, comparer, ga, gb)
        ep.alignment = align_calls(ep.tool_calls_a, ep.tool_calls_b)
    return ep


def _steps(group: Channels | None) -> int:
    return sum(len(steps) for steps in (group or {}).values())


def _calls(group: Channels | None) -> list[ToolCall]:
    """The tool calls of one side of an episode, in file order."""
    entries = [e for steps in (group or {}).values() for e in steps.values()]
    entries.sort(key=lambda e: (e.source, e.line))
    return [call for entry in entries for call in tool_calls_of(entry)]


def _by_outcome(comparer: Comparer, oa: Json | None, ob: Json | None) -> Divergence | None:
    """Where two episodes whose steps are equal differ in their outcome, if they do."""
    wa, wb = (comparer.rules.norm({"outcome": _outcome_view(o)}) for o in (oa, ob))
    return None if wa == wb else divergence(None, None, "outcome", wa, wb)


def _cause(d: Divergence, comparer: Comparer, ga: Channels | None, gb: Channels | None) -> str:
    """The cause of ``d``, reading the full requests of its step when the path needs them."""
    if d.part not in ("request", "response") or d.channel is None or d.step is None:
        return classify(d)
    fulls = []
    for group in (ga, gb):
        entry = (group or {}).get(d.channel, {}).get(d.step)
        fulls.append(comparer.full(entry) if entry is not None else None)
    comparer.forget()
    return classify(d, fulls[0], fulls[1])


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
    "A" and "B" for indexes); ``seed`` seeds the bootstrap and Monte Carlo statistics
    (:mod:`cassette.diff.stats`). Raises ValueError for a malformed ignore path or an episode
    that neither run holds.
    """
    rules = Rules(ignore)
    with paused_gc():
        (ia, la), (ib, lb) = _load(a, "A"), _load(b, "B")
        la, lb = labels or (la, lb)
        return _diff(rules, (ia, la), (ib, lb), env, progress, seed)


def _diff(
    rules: Rules,
    loaded_a: tuple[Index, str],
    loaded_b: tuple[Index, str],
    env: EnvIndex | None,
    progress: Progress | None,
    seed: int = 0,
) -> RunDiff:
    (index_a, label_a), (index_b, label_b) = loaded_a, loaded_b
    groups_a, groups_b = group_by_episode(index_a), group_by_episode(index_b)
    forks = take_forks(groups_a) | take_forks(groups_b)  # not calls: shown per episode
    envs = sorted({*groups_a, *groups_b, *index_a.outcomes, *index_b.outcomes}, key=_sort_key)
    if env is not None:
        envs = [_select(envs, env)]
    comparer = Comparer(rules)
    run_a, run_b = RunSummary(label_a), RunSummary(label_b)
    episodes: list[EpisodeDiff] = []
    total = len(envs)
    tick = max(1, total // 200)
    for done, e in enumerate(envs, 1):
        sides = (groups_a.get(e), groups_b.get(e), index_a.outcomes.get(e), index_b.outcomes.get(e))
        episodes.append(_episode_diff(e, comparer, sides))
        episodes[-1].fork = forks.get(e)
        _tally(run_a, sides[0], sides[2])
        _tally(run_b, sides[1], sides[3])
        if progress is not None and (done % tick == 0 or done == total):
            progress(done, total)
    _finish(run_a)
    _finish(run_b)
    return RunDiff(
        a=run_a,
        b=run_b,
        episodes=episodes,
        ignored=rules.listed(),
        volatile_seen=sorted(comparer.volatile_seen),
        stats=paired_stats(episodes, seed=seed),
        causes=group_causes(episodes),
        index_a=index_a,
        index_b=index_b,
    )
