"""Rollouts at scale: 16 Ray tasks (a real local Ray cluster) and a process pool record
episodes through ``wrap_openai`` into one ``s3://`` shard directory (moto's S3 server on
127.0.0.1), configured only by the environment; the set replays offline in fresh Ray
workers and in one plain process, identically, and ``cassette stats`` counts every
episode."""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest
from click.testing import CliRunner

from cassette.cli import main
from cassette.testing.server import ScriptedServer
from tests.helpers.procs import ROOT
from tests.helpers.rollout import run_episode
from tests.helpers.s3server import S3

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

pytestmark = pytest.mark.slow
EPISODES = 16


def _env(s3: S3, url: str, mode: str) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {
        **s3.env,
        "PYTHONPATH": path,
        "CASSETTE_PATH": url,
        "CASSETTE_MODE": mode,
        "CASSETTE_RUN": "rollout-1",
        "CASSETTE_PART_SECONDS": "0.5",
    }


def _check_set(url: str, recorded: list[dict[str, Any]]) -> None:
    assert all(r["mode"] == "record" for r in recorded)
    assert len({tuple(r["texts"]) for r in recorded}) == EPISODES  # episodes differ
    result = CliRunner().invoke(main, ["stats", url, "--json"])
    assert result.exit_code == 0, result.output
    stats = json.loads(result.output)
    assert stats["episodes"] == EPISODES, stats
    assert stats["interactions"] == EPISODES * 3, stats


def _replay_in_process(
    s3: S3, url: str, dead_url: str, monkeypatch: pytest.MonkeyPatch
) -> list[dict[str, Any]]:
    for key, value in _env(s3, url, "replay").items():
        monkeypatch.setenv(key, value)
    return [run_episode(env, dead_url) for env in range(EPISODES)]


def test_ray_tasks_record_one_s3_set_and_replay_it(s3: S3, monkeypatch: pytest.MonkeyPatch) -> None:
    ray = pytest.importorskip("ray")
    url = s3.url("ray/run-1/")
    remote = ray.remote(run_episode)
    with ScriptedServer("echo") as server:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            object_store_memory=80 * 1024 * 1024,
            runtime_env={"env_vars": _env(s3, url, "record")},
        )
        try:
            recorded = ray.get([remote.remote(env, server.base_url) for env in range(EPISODES)])
        finally:
            ray.shutdown()
        dead = server.base_url
    _check_set(url, recorded)
    ray.init(  # fresh workers, and the model server is gone: replay must be offline
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=80 * 1024 * 1024,
        runtime_env={"env_vars": _env(s3, url, "replay")},
    )
    try:
        replayed = ray.get([remote.remote(env, dead) for env in range(EPISODES)])
    finally:
        ray.shutdown()
    assert [r["texts"] for r in replayed] == [r["texts"] for r in recorded]
    assert all(r["mode"] == "replay" for r in replayed)
    plain = _replay_in_process(s3, url, dead, monkeypatch)
    assert [r["texts"] for r in plain] == [r["texts"] for r in recorded]


def test_process_pool_records_one_s3_set_and_replays_it(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3.url("pool/run-1/")
    spawn = multiprocessing.get_context("spawn")
    with ScriptedServer("echo") as server:
        for key, value in _env(s3, url, "record").items():
            monkeypatch.setenv(key, value)
        with ProcessPoolExecutor(max_workers=4, mp_context=spawn) as pool:
            recorded = list(pool.map(run_episode, range(EPISODES), [server.base_url] * EPISODES))
        dead = server.base_url
    _check_set(url, recorded)
    for key, value in _env(s3, url, "replay").items():
        monkeypatch.setenv(key, value)
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        replayed = list(pool.map(run_episode, range(EPISODES), [dead] * EPISODES))
    assert [r["texts"] for r in replayed] == [r["texts"] for r in recorded]
    plain = _replay_in_process(s3, url, dead, monkeypatch)
    assert [r["texts"] for r in plain] == [r["texts"] for r in recorded]
