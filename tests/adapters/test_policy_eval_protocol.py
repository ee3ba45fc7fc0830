"""wrap_policy with the real eval-protocol: record a rollout, replay it with the model gone.

eval-protocol pins litellm, mcp<2 and openai 2.x, so it lives in its own virtual
environment, the side venv ``ep``, built on first use in the side-venv cache (about 30-60 s
from the package registry; ``tests/helpers/sidevenv.py``) and reused while its marker
matches. ``ep_rollout.py`` runs inside it and
prints a JSON summary that this test checks. Without a registry the test fails, saying so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.sidevenv import REPO, clean_env, side_venv

SCRIPT = Path(__file__).with_name("ep_rollout.py")
PINS = ("eval-protocol==0.3.33", "litellm==1.105.0", "mcp==1.30.0")
# eval-protocol itself without its ~40 dependencies that a rollout never imports
# (anthropic, fireworks-ai, hydra, ...); litellm and mcp bring what it does import
RECIPE = (("--no-deps", PINS[0]), (*PINS[1:], "-e", "{repo}"))
EPISODES = 4  # as in ep_rollout.py


@pytest.fixture(scope="session")
def ep_python() -> Path | str:
    """The venv's interpreter, or why it could not be built (the test then fails)."""
    return side_venv("ep", RECIPE)


@pytest.mark.slow
def test_real_eval_protocol_rollout_replays_offline(ep_python: Path | str, tmp_path: Path) -> None:
    if isinstance(ep_python, str):
        pytest.fail(ep_python, pytrace=False)
    # PYTHONDONTWRITEBYTECODE is dropped so that the first run caches the bytecode of what
    # it imports (pip compiling all of litellm and botocore would take longer)
    env = clean_env("EP_PLAYBACK_FILE")
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    proc = subprocess.run(
        [str(ep_python), str(SCRIPT), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=REPO,
        check=False,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("EP_SUMMARY ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-5000:]
    summary = json.loads(lines[-1].split(" ", 1)[1])
    record, again, replay = summary["record"], summary["live_again"], summary["replay"]

    assert summary["versions"]["eval-protocol"] == "0.3.33"
    assert summary["versions"]["litellm"] == "1.105.0"
    # recording: each episode asked the model twice (tool call, then the final answer)
    assert record["wrapper_is_policy"]
    assert record["model_requests"] == record["policy_calls"] == 2 * EPISODES
    assert record["board_tool_calls"] == EPISODES
    assert len(record["rows"]) == EPISODES
    for row in record["rows"]:
        assert [c["name"] for c in row["tool_calls"]] == ["move"]
        assert row["usage"]["total_tokens"] > 0
        assert row["status"]["details"][0]["metadata"]["termination_reason"] == "stop"
    # the model answers at random: a second live run differs
    assert again["model_requests"] == 2 * EPISODES
    assert [r["tool_calls"] for r in again["rows"]] != [r["tool_calls"] for r in record["rows"]]
    # replay with the server stopped: no model call, identical rollouts, tools ran again
    assert summary["server_stopped"]
    assert replay["policy_calls"] == 0
    assert replay["board_tool_calls"] == EPISODES
    assert replay["rows"] == record["rows"]
    assert {r["usage_type"] for r in replay["rows"]} == {"CompletionUsage"}
    assert summary["changed_prompt"].startswith("CassetteMismatch: request differs")
    assert summary["cassette"]["lines"] == 1 + 2 * EPISODES
