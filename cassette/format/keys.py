"""A line's key (env_index, channel, step) and an episode's outcome, checked before they
are written: a value the format cannot read back would make every later open fail."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from ..errors import CassetteError
from .codec import check_finite

__all__ = ["check_key", "outcome_line"]

_INT64 = 2**63
_STEP_FIX = "pass an int of 0 or more, or leave step to the counter"


def _wrong(name: str, want: str, value: Any, fix: str) -> CassetteError:
    return CassetteError(f"{name} must be {want}, not {type(value).__name__} ({value!r}); {fix}")


def _check_env(env: Any) -> None:
    if isinstance(env, str):
        return
    if isinstance(env, int) and not isinstance(env, bool) and -_INT64 <= env < _INT64:
        return
    fix = "pass an int or a str (an episode's number or name)"
    raise _wrong("env_index", "an int (64-bit) or a str", env, fix)


def check_key(env: Any, channel: Any, step: Any) -> None:
    """Raise :class:`CassetteError` unless (``env``, ``channel``, ``step``) can be a key."""
    _check_env(env)
    if not isinstance(channel, str):
        raise _wrong("channel", "a str", channel, "pass a str such as 'llm' or 'mcp'")
    _check_step(step)


def _check_step(step: Any) -> None:
    if type(step) is not int and (isinstance(step, bool) or not isinstance(step, int)):
        raise _wrong("step", "an int", step, _STEP_FIX)
    if step < 0:
        raise CassetteError(f"step must be 0 or more, not {step}; {_STEP_FIX}")


def _reward(reward: Any) -> float | None:
    if reward is None:
        return None
    if isinstance(reward, (bool, str, bytes)) or not isinstance(reward, numbers.Real):
        raise _wrong("reward", "a number or None", reward, "pass a float")
    value = float(reward)
    if not math.isfinite(value):
        raise CassetteError(
            f"cannot store the reward {value!r} in a cassette (JSON has no NaN or infinity, "
            "and it would read back as null); pass a finite number, or None"
        )
    return value


def _terminated(terminated: Any) -> bool | None:
    if terminated is None:
        return None
    if type(terminated).__name__ in ("bool_", "bool"):  # (numpy's bool too)
        return bool(terminated)
    raise _wrong("terminated", "a bool or None", terminated, "pass True or False")


def outcome_line(env: Any, reward: Any, terminated: Any, info: Any) -> dict[str, Any]:
    """The outcome line of an episode; :class:`CassetteError` for what the format cannot hold."""
    _check_env(env)
    if info is not None and not isinstance(info, Mapping):
        raise CassetteError(
            f"info must be a dict or None, not {type(info).__name__}; pass a dict of JSON values"
        )
    details = dict(info or {})
    check_finite(details, "info")
    return {
        "type": "outcome",
        "env_index": env,
        "reward": _reward(reward),
        "terminated": _terminated(terminated),
        "info": details,
    }
