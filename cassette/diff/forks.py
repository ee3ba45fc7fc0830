"""Fork points in a diff: a cassette made by :func:`cassette.replay.fork` records where each
episode left its base as one interaction on channel ``"fork"``. The diff takes those
records out of the trajectories (they are not calls) and shows them per episode."""

from __future__ import annotations

from typing import Any

from ..replay.fork import FORK_CHANNEL
from ..types import EnvIndex
from .compare import Channels
from .types import Json, RunDiff

__all__ = ["fork_line", "forks_line", "take_forks"]


def take_forks(groups: dict[EnvIndex, Channels]) -> dict[EnvIndex, Json]:
    """Remove the ``"fork"`` channel from each episode of ``groups`` (an episode left with
    no channel is removed) and return the fork record of each episode that has one."""
    forks: dict[EnvIndex, Json] = {}
    for env in list(groups):
        steps = groups[env].pop(FORK_CHANNEL, None)
        if steps:
            response = steps[min(steps)].response
            forks[env] = dict(response) if isinstance(response, dict) else {}
        if not groups[env]:
            del groups[env]
    return forks


def fork_line(fork: Json) -> str:
    """``forked at llm step 3 (mismatch)``."""
    why: Any = fork.get("why")
    return f"forked at {fork.get('channel')} step {fork.get('step')}" + (f" ({why})" if why else "")


def forks_line(diff: RunDiff) -> str | None:
    """``12 episodes forked; first divergence at the fork point in 12``, or None when no
    episode of either run is a fork."""
    forks = diff.forks
    n = forks["forked"]
    if not n:
        return None
    noun = "episode" if n == 1 else "episodes"
    return f"{n} {noun} forked; first divergence at the fork point in {forks['at_fork_point']}"
