"""Small recordings for the storage tests: ``{"q": [env, n]} -> {"a": [env, n]}``."""

from __future__ import annotations

import warnings
from functools import partial
from pathlib import Path
from typing import Any

import cassette
from cassette.storage import store


def answer(env: int | str, n: int) -> dict[str, Any]:
    return {"a": [env, n]}


def no_live() -> dict[str, Any]:
    raise AssertionError("replay must not call the live function")


def read_all(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """Every record of ``path``, failing on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return list(store.iter_records(path))


def record_calls(path: Path, mode: str, calls: list[tuple[int, int]]) -> None:
    """Record ``{"q": [env, n]} -> {"a": [env, n]}`` for each (env, n) in its episode."""
    with cassette.open(path, mode) as cas:
        for env, n in calls:
            resp = cas.call({"q": [env, n]}, live=partial(answer, env, n), env_index=env)
            assert resp == {"a": [env, n]}


def replay_calls(path: Path, calls: list[tuple[int, int]]) -> None:
    with cassette.open(path, "replay") as cas:
        for env, n in calls:
            assert cas.call({"q": [env, n]}, live=no_live, env_index=env) == {"a": [env, n]}
        assert cas.unused() == []
