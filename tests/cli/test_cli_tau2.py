"""``cassette tau2``: tau2's run_tasks under the cassette from the command line; the bundled
tau2 mock cassette (package data) replays offline."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import cassette
from cassette.cli.tau2 import tau2_command
from cassette.storage.index import load_index
from cassette.testing import bundled
from fixtures.tau2_server import Tau2Server
from tests.helpers.tau2_runs import MARKS, litellm_garbage  # noqa: F401 - autouse fixture

pytest.importorskip("tau2", reason="needs the tau2 extra: pip install -e '.[tau2]'")

pytestmark = MARKS


FIXTURE = bundled("tau2_mock")
MODEL = "openai/scripted-model"
ROW = re.compile(r"^(\S+/trial-\d+)\s+(\S+)\s+(\S+)\s+(\S+)$")


def go_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm cannot be reached: a replay that tried would fail."""
    import tau2.utils.llm_utils as llm_utils  # type: ignore[import-untyped]

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("replay must not call litellm")

    monkeypatch.setattr(llm_utils, "completion", no_network)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    go_offline(monkeypatch)


def invoke(*argv: str) -> Result:
    return CliRunner().invoke(tau2_command, list(argv), catch_exceptions=False)


def rows(output: str) -> dict[str, tuple[str, ...]]:
    return {m[1]: m.groups()[1:] for line in output.splitlines() if (m := ROW.match(line))}


def reward_text(value: float | None) -> str:
    return "error" if value is None else f"{value:g}"


def test_bundled_cassette_replays_offline_with_the_recorded_rewards(offline: None) -> None:
    index = load_index([FIXTURE])
    meta = index.headers[0]["meta"]
    assert "scripted" in meta["source"] and "not a real model" in meta["source"]
    assert meta["tau2"]["domain"] == "mock"
    result = invoke("--mode", "replay", str(FIXTURE))
    assert result.exit_code == 0, result.output
    got = rows(result.output)
    assert set(got) == set(index.outcomes) and len(got) == 9
    for env, outcome in index.outcomes.items():
        reward, recorded, _ = got[str(env)]
        assert reward == recorded == reward_text(outcome["reward"])
    calls = len(index.entries)
    assert f"{calls} LLM calls replayed from {FIXTURE}, 0 live" in result.output


def test_record_then_replay_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mock.jsonl"
    with Tau2Server("random") as server:
        recorded = invoke(
            "--mode", "record", "--domain", "mock", "--task-ids", "create_task_1,update_task_1",
            "--num-trials", "2", "--max-concurrency", "2", "--agent-llm", MODEL,
            "--user-llm", MODEL, "--base-url", server.base_url, "--meta", "note=test", str(path),
        )  # fmt: skip
    assert recorded.exit_code == 0, recorded.output
    assert "mock/update_task_1/trial-1" in recorded.output
    assert "LLM calls made" in recorded.output
    header = load_index([path]).headers[0]["meta"]
    assert header["note"] == "test"
    assert header["tau2"]["task_ids"] == ["create_task_1", "update_task_1"]
    assert header["tau2"]["num_trials"] == 2
    go_offline(monkeypatch)
    replayed = invoke(str(path))  # replay is the default; the settings come from the header
    assert replayed.exit_code == 0, replayed.output
    got = rows(replayed.output)
    assert len(got) == 4 and all(r[0] == r[1] for r in got.values())
    assert "mock/update_task_1/trial-1" in got


def test_a_replay_with_another_model_fails_naming_the_episode(offline: None) -> None:
    result = CliRunner().invoke(tau2_command, ["--agent-llm", "openai/other", str(FIXTURE)])
    assert result.exit_code == 2
    assert "request differs from the recording" in result.output
    assert re.search(r"env_index='mock/[^']+/trial-0' channel='agent' step=0", result.output)


def test_missing_cassette_and_missing_settings(tmp_path: Path) -> None:
    none = tmp_path / "none.jsonl"
    missing = CliRunner().invoke(tau2_command, [str(none)])
    assert missing.exit_code == 2 and missing.stderr == (
        f"error: no cassette at {none}; check the path, record one with `cassette tau2 --mode "
        "record --domain mock --agent-llm openai/gpt-4.1-mini --user-llm openai/gpt-4.1-mini "
        f"{none}`, or replay the shipped one with `cassette tau2 --bundled`\n"
    )
    bare = CliRunner().invoke(tau2_command, ["--mode", "record", str(tmp_path / "a.jsonl")])
    assert bare.exit_code == 2
    needed = "--domain, --agent-llm, --user-llm required to record, e.g. --domain mock "
    assert needed in bare.output
    assert "a replay takes them" not in bare.output  # this is no replay
    assert not (tmp_path / "a.jsonl").exists()


def test_a_replay_of_a_cassette_tau2_did_not_record_says_so(tmp_path: Path) -> None:
    """The demo's cassette (or any other run's) has no tau2 settings in its header: not
    "--domain, --agent-llm, --user-llm required", as if the user had left them out."""
    other = tmp_path / "demo.jsonl"
    other.write_bytes(bundled("demo").read_bytes())
    result = CliRunner().invoke(tau2_command, [str(other)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {other} is not a `cassette tau2` recording")
    assert result.stderr.endswith("or replay the shipped one with `cassette tau2 --bundled`\n")


def test_fixture_is_a_valid_cassette() -> None:
    with cassette.open(FIXTURE, "replay") as cas:
        assert {c for _, c, _ in cas.index.entries} == {"agent", "user"}
        assert all(str(e).startswith("mock/") for e in cas.index.outcomes)


def test_the_cassette_command_runs_it_as_the_readme_says(offline: None) -> None:
    from cassette.cli import main

    result = CliRunner().invoke(main, ["tau2", "--bundled"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "9 episodes of mock, mean reward 0.556" in result.output
    assert f"76 LLM calls replayed from {FIXTURE}, 0 live" in result.output
    assert "tau2" in CliRunner().invoke(main, ["--help"]).output


def test_bundled_takes_no_cassette_and_no_cassette_needs_bundled(tmp_path: Path) -> None:
    both = CliRunner().invoke(tau2_command, ["--bundled", str(tmp_path / "a.jsonl")])
    assert both.exit_code == 2 and "leave out CASSETTE and --mode" in both.output
    neither = CliRunner().invoke(tau2_command, [])
    assert neither.exit_code == 2 and "--bundled" in neither.output


def test_bundled_outside_a_git_checkout_prints_nothing_of_git(tmp_path: Path) -> None:
    """run_tasks asks git for the working directory's commit: outside a checkout git said
    "fatal: not a git repository" on the terminal, above the README's table."""
    from tests.helpers.cli import cassette_cli

    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}  # no repository above it either
    proc = cassette_cli("tau2", "--bundled", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "" and proc.stdout.startswith("episode ")
    assert "9 episodes of mock, mean reward 0.556" in proc.stdout


@pytest.mark.parametrize(
    ("mode", "fix"), [("replay", "copy it first"), ("record", "record into a local file")]
)
def test_a_url_cassette_is_refused_naming_the_merge_that_copies_it(mode: str, fix: str) -> None:
    """Path() made s3://b/x.jsonl the local s3:/b/x.jsonl (a folder "s3:" was recorded)."""
    url = "memory://bucket/mock.jsonl"
    result = CliRunner().invoke(tau2_command, ["--mode", mode, url])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"error: cassette tau2 takes a local CASSETTE, not the URL {url}; {fix}"
    )
    assert "cassette merge " in result.stderr


def test_an_unknown_domain_or_task_is_one_line_naming_the_choices(tmp_path: Path) -> None:
    llms = ("--agent-llm", MODEL, "--user-llm", MODEL)
    for args, says in (
        (("--domain", "nosuch"), "pick --domain from mock, airline"),
        (("--domain", "mock", "--task-ids", "nosuch"), "check --domain and --task-ids"),
    ):
        path = tmp_path / "runs" / "t.jsonl"
        result = CliRunner().invoke(tau2_command, ["--mode", "record", *args, *llms, str(path)])
        errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
        assert result.exit_code == 2 and len(errors) == 1, result.output  # (tau2 logs too)
        assert errors[0].startswith("error: tau2: ") and says in errors[0], errors[0]
        # refused before the cassette is opened: no side file is left beside it
        assert not path.parent.exists() or list(path.parent.iterdir()) == []
