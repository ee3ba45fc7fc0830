"""Many threads, tasks and processes recording into one cassette at once: every line is
whole, every interaction is there once, the delta encoding rebuilds the exact requests,
and replay serves each caller its own responses."""

from __future__ import annotations

import asyncio
import itertools
import random
import threading
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import orjson

import cassette
from cassette.storage.index import load_index
from tests.helpers.procs import Workers
from tests.helpers.worker import request_for, response_for

EPISODES = 32
STEPS = 6


def no_live() -> dict[str, Any]:
    raise AssertionError("replay must not call the live function")


def check_cassette(path: Path, keys: set[tuple[int, int]]) -> list[dict[str, Any]]:
    """Assert that ``path`` holds exactly the interactions ``keys`` (env, step) of the
    worker conversation, in whole lines; return the parsed lines."""
    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = [orjson.loads(raw) for raw in data.split(b"\n")[:-1]]  # every line parses
    assert all(isinstance(obj, dict) for obj in lines)
    interactions = [obj for obj in lines if obj["type"] == "interaction"]
    seen = Counter((obj["env_index"], obj["step"]) for obj in interactions)
    assert set(seen) == keys
    assert all(count == 1 for count in seen.values()), seen.most_common(3)
    # the requests really are delta-encoded (and the assistant answers are references)
    deltas = [obj for obj in interactions if "delta" in obj]
    assert len(deltas) == len(interactions) - len({env for env, _ in keys})
    for obj in deltas:
        # only the new turn is stored: the previous answer by reference, then the user
        env, step = obj["env_index"], obj["step"]
        assert obj["delta"]["base"] == step - 1
        assert obj["request"]["messages"] == [
            {"$ref": ["choices", 0, "message"]},
            request_for(env, step)["messages"][-1],
        ]

    index = load_index([path])
    assert {(env, step) for env, _, step in index.entries} == keys
    for (env, channel, step), entry in index.entries.items():
        assert channel == "llm"
        assert entry.full_request() == request_for(env, step)
        assert entry.response == response_for(env, step)
        assert entry.error is None
    rebuilt = {(entry.env_index, entry.step): full for entry, full in index.iter_full()}
    assert rebuilt == {(e, s): request_for(e, s) for e, s in keys}
    return lines


def interleaving(lines: list[dict[str, Any]], group: dict[int, int] | None = None) -> int:
    """How often consecutive interaction lines belong to different episodes (or groups)."""
    envs = [obj["env_index"] for obj in lines if obj["type"] == "interaction"]
    if group is not None:
        envs = [group[e] for e in envs]
    return sum(1 for a, b in itertools.pairwise(envs) if a != b)


ALL_KEYS = {(env, step) for env in range(EPISODES) for step in range(STEPS)}


# --- threads ---------------------------------------------------------------------------


def test_32_threads_record_into_one_cassette(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    barrier = threading.Barrier(EPISODES, timeout=20)
    live_calls: Counter[tuple[int, int]] = Counter()
    lock = threading.Lock()

    def live(env: int, step: int) -> dict[str, Any]:
        with lock:
            live_calls[(env, step)] += 1
        time.sleep(random.random() * 0.002)  # let the threads overtake each other
        return response_for(env, step)

    def play(cas: cassette.Cassette, env: int) -> None:
        # the episode comes from the submitting code's context, not an argument
        assert cassette.current_episode() == env
        barrier.wait()
        for step in range(STEPS):
            resp = cas.call(request_for(env, step), live=partial(live, env, step))
            assert resp == response_for(env, step)

    with (
        cassette.open(path, "record") as cas,
        cassette.ContextExecutor(max_workers=EPISODES) as pool,
    ):
        futures = []
        for env in range(EPISODES):
            with cassette.episode(env):
                futures.append(pool.submit(play, cas, env))
        for future in futures:
            future.result()

    assert set(live_calls) == ALL_KEYS
    assert all(n == 1 for n in live_calls.values())
    lines = check_cassette(path, ALL_KEYS)
    assert lines[0]["type"] == "header"
    assert sum(obj["type"] == "header" for obj in lines) == 1
    assert interleaving(lines) > EPISODES  # the episodes really were recorded at once

    # replay in plain threads, the episode carried by cassette.bind
    errors: list[BaseException] = []
    replay = cassette.open(path, "replay")

    def replay_episode() -> None:
        try:
            env = cassette.current_episode()
            assert isinstance(env, int)
            barrier.wait()
            for step in range(STEPS):
                assert replay.call(request_for(env, step), live=no_live) == response_for(env, step)
        except (AssertionError, threading.BrokenBarrierError, cassette.CassetteError) as exc:
            errors.append(exc)  # reported by the test thread below

    threads = []
    for env in range(EPISODES):
        with cassette.episode(env):
            threads.append(threading.Thread(target=cassette.bind(replay_episode)))
    barrier.reset()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    replay.close()
    assert errors == []
    assert replay.unused() == []


def test_threads_sharing_one_episode_keep_the_delta_chain_consistent(tmp_path: Path) -> None:
    # parallel calls inside one episode (e.g. tool calls fanned out), each with its step:
    # every line's delta must refer to the line written before it for that key
    path = tmp_path / "fanout.jsonl"
    workers, calls = 16, 8

    def request(step: int) -> dict[str, Any]:
        return {
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "shared prefix"},
                {"role": "user", "content": f"call {step}"},
            ],
        }

    def work(cas: cassette.Cassette, first: int) -> None:
        for step in range(first, first + calls):
            assert cas.call(request(step), live=partial(dict, n=step), step=step) == {"n": step}

    with (
        cassette.open(path, "record") as cas,
        cassette.ContextExecutor(max_workers=workers) as pool,
        cassette.episode("fanout"),
    ):
        for future in [pool.submit(work, cas, w * calls) for w in range(workers)]:
            future.result()

    index = load_index([path])
    steps = range(workers * calls)
    assert sorted(step for _, _, step in index.entries) == list(steps)
    assert all(env == "fanout" for env, _, _ in index.entries)
    assert sum(entry.delta is not None for entry in index.entries.values()) == len(steps) - 1
    for (_, _, step), entry in index.entries.items():
        assert entry.full_request() == request(step)
    assert {e.step: full for e, full in index.iter_full()} == {s: request(s) for s in steps}
    with cassette.open(path, "replay") as cas, cassette.episode("fanout"):
        for step in reversed(steps):
            assert cas.call(request(step), live=no_live, step=step) == {"n": step}


def test_threads_replaying_a_changed_request_get_a_mismatch(tmp_path: Path) -> None:
    # concurrency must not make a wrong request slip through: each thread is verified
    path = tmp_path / "c.jsonl"
    with cassette.open(path, "record") as cas, cassette.ContextExecutor(max_workers=8) as pool:
        for env in range(8):
            with cassette.episode(env):
                pool.submit(cas.call, request_for(env, 0), live=partial(response_for, env, 0))
    results: dict[int, Any] = {}

    def ask(cas: cassette.Cassette, env: int) -> None:
        request = request_for(env, 0)
        if env == 5:
            request["messages"][1]["content"] = "something else"
        try:
            results[env] = cas.call(request, live=no_live)
        except cassette.CassetteMismatch as exc:
            results[env] = exc

    with cassette.open(path, "replay") as cas, cassette.ContextExecutor(max_workers=8) as pool:
        futures = []
        for env in range(8):
            with cassette.episode(env):
                futures.append(pool.submit(ask, cas, env))
        for future in futures:
            future.result()
    assert isinstance(results.pop(5), cassette.CassetteMismatch)
    assert results == {env: response_for(env, 0) for env in range(8) if env != 5}


# --- asyncio tasks ---------------------------------------------------------------------


def test_32_asyncio_tasks_record_into_one_cassette(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    live_calls: Counter[tuple[int, int]] = Counter()

    async def live(env: int, step: int) -> dict[str, Any]:
        live_calls[(env, step)] += 1
        for _ in range(random.randrange(3)):
            await asyncio.sleep(0)
        return response_for(env, step)

    async def play(cas: cassette.Cassette, env: int, record: bool) -> None:
        with cassette.episode(env):
            await asyncio.sleep(0)
            for step in range(STEPS):
                if record:
                    resp = await cas.acall(request_for(env, step), live=partial(live, env, step))
                else:
                    resp = await cas.acall(request_for(env, step), live=_async_no_live)
                assert resp == response_for(env, step)

    async def run(mode: str) -> cassette.Cassette:
        async with cassette.open(path, mode) as cas:
            await asyncio.gather(*(play(cas, env, mode == "record") for env in range(EPISODES)))
        return cas

    asyncio.run(run("record"))
    assert set(live_calls) == ALL_KEYS
    assert all(n == 1 for n in live_calls.values())
    lines = check_cassette(path, ALL_KEYS)
    assert interleaving(lines) > EPISODES

    replayed = asyncio.run(run("replay"))
    assert replayed.unused() == []
    assert sum(live_calls.values()) == len(ALL_KEYS)


async def _async_no_live() -> dict[str, Any]:
    raise AssertionError("replay must not call the live function")


# --- processes -------------------------------------------------------------------------


def test_two_processes_append_to_one_file(tmp_path: Path, workers: Workers) -> None:
    path = tmp_path / "shared.jsonl"
    go = tmp_path / "go"
    steps = 12
    groups = {"a": [0, 1, 2, 3], "b": [4, 5, 6, 7]}
    procs = {}
    # each worker makes its first call (which creates or checks the file) while the other
    # waits, then both run at once when the go file appears
    for name, envs in groups.items():
        proc = workers.start(
            str(path),
            "append",
            "--envs",
            ",".join(map(str, envs)),
            "--steps",
            str(steps),
            "--pause-after",
            "1",
            "--go",
            str(go),
            "--sleep",
            "0.001",
        )
        assert workers.read_line(proc).startswith("READY 1")
        procs[name] = proc
    go.touch()
    for proc in procs.values():
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert out.split() == ["LIVE", str(4 * steps)]

    keys = {(env, step) for envs in groups.values() for env in envs for step in range(steps)}
    lines = check_cassette(path, keys)
    assert [obj["type"] for obj in lines].count("header") == 1
    group = {env: i for i, envs in enumerate(groups.values()) for env in envs}
    assert interleaving(lines, group) > 2  # both processes wrote at the same time

    with cassette.open(path, "replay") as cas:
        for env, step in sorted(keys):
            with cassette.episode(env):
                assert cas.call(request_for(env, step), live=no_live) == response_for(env, step)
        assert cas.unused() == []
