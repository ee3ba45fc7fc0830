"""patch_tau2 with the real tau2 engine: record against the scripted server, replay offline."""

from __future__ import annotations

import contextlib
import random
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI

import cassette
from cassette.adapters.tau2 import CHANNELS, env_index_for, patch_tau2, trial_for_seed
from cassette.storage.index import load_index
from fixtures.tau2_server import Tau2Server
from tests.helpers.tau2_runs import (
    MARKS,
    MODEL,
    calls_of,
    litellm_garbage,  # noqa: F401 - autouse fixture
    run_tasks,
    transcript,
)

pytest.importorskip("tau2", reason="needs the tau2 extra: pip install -e '.[tau2]'")

pytestmark = MARKS


HOLDERS = {
    "tau2.agent.llm_agent": "agent",
    "tau2.user.user_simulator": "user",
    "tau2.evaluator.evaluator_nl_assertions": "judge",
    "tau2.environment.utils.interface_agent": "interface",
}


def by_key(sims: list[Any]) -> dict[tuple[str, int], Any]:
    return {(s.task_id, s.trial): s for s in sims}


def assert_identical(recorded: list[Any], replayed: list[Any]) -> None:
    a, b = by_key(recorded), by_key(replayed)
    assert a.keys() == b.keys()
    for key, sim in a.items():
        other = b[key]
        assert other.reward_info.model_dump() == sim.reward_info.model_dump(), key
        assert other.termination_reason == sim.termination_reason, key
        assert transcript(other) == transcript(sim), key


@dataclass
class Run:
    path: Path
    recorded: list[Any]
    replayed: list[Any]
    live_requests: int
    unused: list[Any]


def record_and_replay(path: Path, domain: str, **kwargs: Any) -> Run:
    with Tau2Server("random") as server:
        with cassette.open(path, "record") as cas, patch_tau2(cas):
            recorded = run_tasks(domain, server.base_url, **kwargs)
        live = server.request_count
    # the server is gone: anything but the cassette would fail to connect
    with cassette.open(path, "replay") as cas, patch_tau2(cas):
        replayed = run_tasks(domain, **kwargs)
        unused = cas.unused()
    return Run(path, recorded, replayed, live, unused)


@pytest.fixture(scope="module")
def mock_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    path = tmp_path_factory.mktemp("tau2") / "mock.jsonl"
    return record_and_replay(path, "mock", num_trials=2, max_concurrency=3)


# --- record and replay ------------------------------------------------------------------


def test_mock_domain_replays_identically(mock_run: Run) -> None:
    assert len(mock_run.recorded) == 18  # 9 tasks x 2 trials
    assert_identical(mock_run.recorded, mock_run.replayed)
    assert mock_run.live_requests > 0
    assert mock_run.unused == []  # every recorded call was asked for again


def test_the_recording_is_a_real_conversation(mock_run: Run) -> None:
    sims = [s for s in mock_run.recorded if not s.skipped]
    reasons = {s.termination_reason.value for s in sims}
    assert "user_stop" in reasons  # the user simulator ended with ###STOP###
    assert any(calls_of(m) for s in sims for m in s.messages if m.role == "assistant")
    assert any(t.role == "tool" for s in sims for t in s.messages)


def test_keys_are_episode_channel_step(mock_run: Run) -> None:
    index = load_index([mock_run.path])
    envs = {env for env, _, _ in index.entries}
    tasks = {s.task_id for s in mock_run.recorded}
    assert envs <= {env_index_for("mock", t, trial) for t in tasks for trial in (0, 1)}
    assert "mock/create_task_1/trial-1" in envs
    assert {channel for _, channel, _ in index.entries} == {"agent", "user"}
    for env in envs:  # steps count per (episode, channel) from 0
        for channel in ("agent", "user"):
            steps = sorted(s for e, c, s in index.entries if e == env and c == channel)
            assert steps == list(range(len(steps)))


def test_requests_are_litellm_level_without_transport(mock_run: Run) -> None:
    index = load_index([mock_run.path])
    for entry, request in index.iter_full():
        assert {"model", "messages"} <= request.keys()
        assert not {"api_base", "api_key", "base_url", "num_retries"} & request.keys()
        assert all(isinstance(m, dict) and "role" in m for m in request["messages"])
        if entry.channel == "agent":
            assert request["tool_choice"] == "auto"
            assert request["tools"][0]["type"] == "function"
            assert isinstance(request["seed"], int)  # the trial's seed, set by tau2
        assert {"choices", "usage", "cost", "raw_data"} <= (entry.response or {}).keys()
    assert b"dummy" not in mock_run.path.read_bytes()


def test_each_episode_has_its_reward_info_as_outcome(mock_run: Run) -> None:
    outcomes = load_index([mock_run.path]).outcomes
    for sim in mock_run.recorded:
        outcome = outcomes[env_index_for("mock", sim.task_id, sim.trial)]
        if sim.skipped:  # tau2 itself raised (an env assertion on a task never created)
            assert outcome["terminated"] is False
            assert outcome["info"]["error"]
        else:
            assert outcome["info"] == sim.reward_info.model_dump(mode="json")
            assert outcome["reward"] == sim.reward_info.reward
            assert outcome["terminated"] is True


@pytest.mark.slow
def test_airline_tasks_replay_identically(tmp_path: Path) -> None:
    run = record_and_replay(tmp_path / "airline.jsonl", "airline", task_ids=["0", "1", "2"])
    assert len(run.recorded) == 3
    assert_identical(run.recorded, run.replayed)
    assert run.unused == []


def test_changed_agent_fails_naming_episode_and_step(
    mock_run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tau2.agent.llm_agent as llm_agent  # type: ignore[import-untyped]

    monkeypatch.setattr(llm_agent, "AGENT_INSTRUCTION", "You are a different agent.")
    mismatch = pytest.raises(cassette.CassetteMismatch)
    with cassette.open(mock_run.path, "replay") as cas, patch_tau2(cas), mismatch as info:
        run_tasks("mock", task_ids=["create_task_1"], max_concurrency=1)
    message = str(info.value)
    assert "env_index='mock/create_task_1/trial-0' channel='agent' step=0" in message
    assert "messages[0].content" in message


def test_mismatch_that_tau2_swallows_still_fails(tmp_path: Path) -> None:
    """tau2's repetition judge catches every exception; the episode fails all the same."""
    path = tmp_path / "judge.jsonl"
    judge: dict[str, Any] = {"task_ids": ["create_task_1"], "num_trials": 1, "judge_llm": MODEL}
    with Tau2Server("random") as server, cassette.open(path, "record") as cas, patch_tau2(cas):
        args = {"api_base": server.base_url, "api_key": "dummy"}
        run_tasks("mock", server.base_url, judge_llm_args=args, judge_window_size=2, **judge)
    assert any(c == "judge" for _, c, _ in load_index([path]).entries)
    with cassette.open(path, "replay") as cas, patch_tau2(cas):
        replayed = run_tasks("mock", judge_llm_args={}, judge_window_size=2, **judge)
        assert len(replayed) == 1
    mismatch = pytest.raises(cassette.CassetteMismatch, match="channel='judge' step=0")
    with cassette.open(path, "replay") as cas, patch_tau2(cas), mismatch:
        run_tasks("mock", judge_llm_args={}, judge_window_size=3, **judge)


def test_generate_routes_to_any_client_and_judge_channel(tmp_path: Path) -> None:
    path = tmp_path / "client.jsonl"
    from tau2.evaluator.evaluator import EvaluationType  # type: ignore[import-untyped]

    kind = EvaluationType.ALL_WITH_NL_ASSERTIONS
    kwargs: dict[str, Any] = {"task_ids": ["create_task_1_nl_eval"], "evaluation_type": kind}
    with (
        Tau2Server("random") as server,
        OpenAI(base_url=server.base_url, api_key="dummy", max_retries=0) as client,
        cassette.open(path, "record") as cas,
        patch_tau2(cas, generate=client),
    ):
        recorded = run_tasks("mock", **kwargs)
        assert server.request_count > 0
    channels = {c for _, c, _ in load_index([path]).entries}
    assert channels == {"agent", "user", "judge"}  # judge: the NL-assertions evaluator

    def offline(**request: Any) -> Any:
        raise AssertionError("replay must not call the model")

    with cassette.open(path, "replay") as cas, patch_tau2(cas, generate=offline):
        replayed = run_tasks("mock", **kwargs)
    assert_identical(recorded, replayed)
    assert recorded[0].reward_info.nl_assertions  # the judge's verdicts, replayed


# --- patching and unpatching ------------------------------------------------------------


def references() -> tuple[Any, set[tuple[str, str]], tuple[Any, Any]]:
    import importlib

    import tau2.run
    import tau2.utils.llm_utils as llm_utils  # type: ignore[import-untyped]

    for name in HOLDERS:  # the patch imports them; they must not count as new references
        importlib.import_module(name)
    original = llm_utils.generate
    refs = {
        (name, attr)
        for name, module in list(sys.modules.items())
        for attr, value in list(getattr(module, "__dict__", {}).items())
        if value is original
    }
    return original, refs, (tau2.run.run_task, tau2.run.run_tasks)


@contextlib.contextmanager
def patched(tmp_path: Path) -> Iterator[Any]:
    with cassette.open(tmp_path / "p.jsonl", "record") as cas, patch_tau2(cas) as patch:
        yield patch


def test_patch_replaces_every_reference_and_restores_them(tmp_path: Path) -> None:
    before = references()
    original, refs, runners = before
    assert {(name, "generate") for name in HOLDERS} | {("tau2.utils.llm_utils", "generate")} <= refs
    with patched(tmp_path) as patch:
        for name, attr in refs:
            wrapper = getattr(sys.modules[name], attr)
            assert wrapper is not original and wrapper.__wrapped__ is original
        assert patch.original is original
        assert sys.modules["tau2.run"].run_task is not runners[0]
        assert sys.modules["tau2.run"].run_tasks is not runners[1]
        for name, channel in HOLDERS.items():
            assert patch.channel_for(name) == channel
        assert patch.channel_for("tau2.orchestrator.orchestrator") == "judge"
        assert patch.channel_for("somebody.else") == "llm"
        late = types.ModuleType("late_copy")  # imported while patched: copies the wrapper
        late.__dict__["generate"] = sys.modules["tau2.utils.llm_utils"].generate
        sys.modules["late_copy"] = late
    del sys.modules["late_copy"]
    assert late.__dict__["generate"] is original
    assert references() == before


def test_patch_restores_after_an_exception(tmp_path: Path) -> None:
    before = references()
    with pytest.raises(RuntimeError, match="boom"), patched(tmp_path):
        raise RuntimeError("boom")
    assert references() == before


def test_patch_does_not_nest(tmp_path: Path) -> None:
    before = references()
    with patched(tmp_path):
        inside = references()
        nested = pytest.raises(cassette.CassetteError, match="already active")
        with nested, cassette.open(tmp_path / "q.jsonl", "record") as cas, patch_tau2(cas):
            pass  # pragma: no cover
        assert references() == inside
    assert references() == before


def test_channels_are_configurable(tmp_path: Path) -> None:
    channels = {"tau2.user": "customer"}
    with (
        cassette.open(tmp_path / "c.jsonl", "record") as cas,
        patch_tau2(cas, channels=channels) as patch,
    ):
        assert patch.channel_for("tau2.user.user_simulator") == "customer"
        assert patch.channel_for("tau2.agent.llm_agent") == CHANNELS["tau2.agent"]


def test_telecom_bill_ids_are_the_same_in_every_run_of_an_episode(tmp_path: Path) -> None:
    import uuid

    import tau2.domains.telecom.tools as telecom  # type: ignore[import-untyped]

    def ids(env: str) -> list[str]:
        with patched(tmp_path), cassette.episode(env):
            return [telecom.uuid.uuid4().hex[:8] for _ in range(3)]

    assert ids("telecom/t/trial-0") == ids("telecom/t/trial-0")
    assert ids("telecom/t/trial-0") != ids("telecom/t/trial-1")
    assert len(set(ids("telecom/t/trial-0"))) == 3
    assert telecom.uuid is uuid


def test_trial_is_derived_from_the_seed_as_run_tasks_does() -> None:
    state = random.getstate()
    try:
        random.seed(300)  # what run_tasks(seed=300, num_trials=5) does
        seeds = [random.randint(0, 1000000) for _ in range(5)]
    finally:
        random.setstate(state)
    assert [trial_for_seed(s) for s in seeds] == [0, 1, 2, 3, 4]
    assert trial_for_seed(seeds[2], base_seed=300) == 2
    assert trial_for_seed(-1) is None


# --- single generate calls --------------------------------------------------------------


def messages() -> list[Any]:
    from tau2.data_model.message import SystemMessage, UserMessage  # type: ignore[import-untyped]

    return [
        SystemMessage(role="system", content="be brief"),
        UserMessage(role="user", content="hi"),
    ]


def test_a_recorded_litellm_error_replays_as_its_own_type(tmp_path: Path) -> None:
    import litellm
    import tau2.utils.llm_utils as llm_utils

    path = tmp_path / "errors.jsonl"
    args = {"api_key": "dummy"}
    bad_request = litellm.exceptions.BadRequestError
    with (
        Tau2Server("random", errors={1: 400}) as server,
        cassette.open(path, "record") as cas,
        patch_tau2(cas),
        cassette.episode("direct"),
    ):
        with pytest.raises(bad_request) as live:
            llm_utils.generate(MODEL, messages(), api_base=server.base_url, **args)
        answer = llm_utils.generate(MODEL, messages(), api_base=server.base_url, **args)
    assert {c for _, c, _ in load_index([path]).entries} == {"llm"}  # called from here
    with cassette.open(path, "replay") as cas, patch_tau2(cas), cassette.episode("direct"):
        with pytest.raises(bad_request) as replayed:
            llm_utils.generate(MODEL, messages())
        again = llm_utils.generate(MODEL, messages())
    assert str(replayed.value) == str(live.value)
    assert (again.content, again.cost, again.usage) == (answer.content, answer.cost, answer.usage)
    assert again.raw_data == answer.raw_data


def test_generate_accepts_an_async_callable_with_tool_calls(tmp_path: Path) -> None:
    import tau2.utils.llm_utils as llm_utils

    seen: list[dict[str, Any]] = []

    async def policy(**request: Any) -> dict[str, Any]:
        seen.append(request)
        call = {"id": "c1", "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": "x"}'}}  # fmt: skip
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        return {"choices": [{"index": 0, "message": message}], "usage": usage}

    path = tmp_path / "policy.jsonl"
    with cassette.open(path, "record") as cas, patch_tau2(cas, generate=policy):
        got = llm_utils.generate(MODEL, messages(), temperature=0.0, api_key="secret-ish")
    assert seen == [{"model": MODEL, "messages": seen[0]["messages"], "temperature": 0.0}]
    with cassette.open(path, "replay") as cas, patch_tau2(cas, generate=None):
        again = llm_utils.generate(MODEL, messages(), temperature=0.0)
    for message in (got, again):
        assert message.role == "assistant" and message.content is None
        assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
            ("c1", "lookup", {"q": "x"})
        ]
        assert message.usage == {"completion_tokens": 2, "prompt_tokens": 5}
