"""Fork tau2 episodes: record the mock domain, fork every episode at agent step k with
another scripted model, check the prefix is byte-identical and the suffix live (issue 14)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import cassette
from cassette import fork
from cassette.adapters.tau2 import patch_tau2
from cassette.replay.fork import FORK_CHANNEL, fork_points
from cassette.storage.index import load_index
from fixtures.tau2_server import Tau2Server
from tests.adapters.test_tau2 import run_tasks, transcript
from tests.helpers.tau2 import MARKS, litellm_garbage  # noqa: F401 - autouse fixture

pytest.importorskip("tau2", reason="needs the tau2 extra: pip install -e '.[tau2]'")

pytestmark = MARKS
K = 2  # the agent step each episode forks at
TASKS = ["create_task_1", "update_task_with_message_history", "impossible_task_1"]


def entries(path: Path) -> dict[Any, Any]:
    return {k: e for k, e in load_index([path]).entries.items() if k[1] != FORK_CHANNEL}


def by_task(sim: Any) -> str:
    return str(sim.task_id)


def raw(entry: Any) -> bytes:
    full = entry.param("messages")
    return orjson.dumps([full, entry.response, entry.error], option=orjson.OPT_SORT_KEYS)


def test_tau2_episodes_fork_at_step_k(tmp_path: Path) -> None:
    # seeded servers ("script" mode with an empty queue): the same conversation gets the
    # same answer whatever order the concurrent tasks run in, so the base always holds
    # episodes longer than K (random mode sometimes ended all three before it)
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with Tau2Server("script", seed=1) as server, cassette.open(base, "record") as cas:  # noqa: SIM117
        with patch_tau2(cas):
            recorded = run_tasks("mock", server.base_url, task_ids=TASKS, max_concurrency=3)
    with Tau2Server("script", seed=2) as other:  # another model
        with fork(new, from_cassette=base, fork_at=lambda env, step: step >= K,
                  fork_channel="agent") as cas, patch_tau2(cas):  # fmt: skip
            forked = run_tasks("mock", other.base_url, task_ids=TASKS, max_concurrency=3)
        live = other.request_count
    a, b = entries(base), entries(new)
    points = fork_points(new)
    long_enough = {env for env, channel, step in a if channel == "agent" and step >= K}
    assert long_enough and set(points) == long_enough
    assert all(p["step"] == K and p["channel"] == "agent" for p in points.values())
    assert all(p["base"] == str(base) for p in points.values())
    for env in long_enough:
        # before the fork: the base's calls, byte for byte (agent steps < K and the user
        # turns that came before them)
        prefix = [k for k in b if k[0] == env and k[1] == "agent" and k[2] < K]
        assert len(prefix) == K and all(raw(a[k]) == raw(b[k]) for k in prefix)
        assert raw(a[(env, "user", 0)]) == raw(b[(env, "user", 0)])
        # from the fork: live, another model's answers
        assert (env, "agent", K) in b and b[(env, "agent", K)].response != a[
            (env, "agent", K)
        ].response
    suffix = [k for k in b if k not in a or raw(a[k]) != raw(b[k])]
    assert {k[0] for k in suffix} == long_enough  # only the forked episodes went live
    assert live == len(suffix) >= len(long_enough)
    # the transcripts share their beginning with the base
    pairs = zip(sorted(recorded, key=by_task), sorted(forked, key=by_task), strict=True)
    for old, sim in pairs:
        assert transcript(sim)[:3] == transcript(old)[:3]
    # the new cassette replays alone, offline (no server runs now)
    with cassette.open(new, "replay") as cas, patch_tau2(cas):
        again = run_tasks("mock", task_ids=TASKS, max_concurrency=3)
    assert [transcript(s) for s in sorted(again, key=by_task)] == [
        transcript(s) for s in sorted(forked, key=by_task)
    ]
