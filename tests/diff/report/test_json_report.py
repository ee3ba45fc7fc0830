"""render_json on the golden diff: stable keys, plain JSON types."""

from __future__ import annotations

from pathlib import Path

import orjson

from cassette.diff import diff_runs
from cassette.diff.report import render_json

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "diff"
A, B = GOLDEN / "run_a.jsonl", GOLDEN / "run_b.jsonl"

RUN_KEYS = {
    "label",
    "episodes",
    "interactions",
    "rewarded",
    "mean_reward",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost",
}
EPISODE_KEYS = {
    "env_index",
    "status",
    "divergence",
    "reward_a",
    "reward_b",
    "steps_a",
    "steps_b",
    "tool_calls_a",
    "tool_calls_b",
    "cause",
    "alignment",
    "delta",
    "change",
}
DIVERGENCE_KEYS = {"channel", "step", "part", "path", "a", "b", "a_missing", "b_missing"}


def test_schema_and_values() -> None:
    diff = diff_runs(A, B, labels=("a", "b"))
    text = render_json(diff)
    data = orjson.loads(text)
    assert text.endswith("}\n") and text.startswith('{\n  "format"')
    assert data.keys() == {
        "format",
        "version",
        "a",
        "b",
        "episodes",
        "ignored",
        "volatile_seen",
        "stats",
        "causes",
        "noise",
        "equivalent",
        "counts",
    }
    assert (data["format"], data["version"], data["equivalent"]) == (
        "rollout-cassette/diff",
        1,
        False,
    )
    assert data["a"].keys() == RUN_KEYS and data["b"].keys() == RUN_KEYS
    assert (data["a"]["mean_reward"], data["b"]["mean_reward"]) == (0.8, 0.7)
    assert data["counts"] == {
        "identical": 1,
        "diverged": 3,
        "only_a": 1,
        "only_b": 1,
        "improved": 1,
        "regressed": 1,
        "unchanged": 2,
    }
    assert [e.keys() == EPISODE_KEYS for e in data["episodes"]] == [True] * 6
    ep = data["episodes"][1]
    assert ep["divergence"].keys() == DIVERGENCE_KEYS
    assert ep["divergence"]["a"] == "Lyon" and ep["change"] == "regressed"
    assert data["episodes"][3]["status"] == "only_a" and data["episodes"][3]["delta"] is None
    assert "response.id" in data["volatile_seen"] and "meta.latency_ms" in data["ignored"]
    assert data == orjson.loads(orjson.dumps(diff.to_dict()))
