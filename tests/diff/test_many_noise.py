"""The noise floor (--baseline), many runs against one, the JSON Schema of --format json,
and the Markdown report's size limit; through diff_many and the `cassette diff` command."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from click.testing import CliRunner

from cassette.cli import main
from cassette.diff import diff_many, diff_runs
from cassette.diff.report import render_many_markdown, render_markdown
from cassette.diff.schema import SCHEMA
from tests.helpers.runs import record

CALLS = [("lookup", {"city": "Oslo"})]
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _run(path: Path, failing: set[int], n: int = 20, trials: int = 0) -> Path:
    if trials:
        plan = {
            f"mock/t{i}/trial-{k}": (CALLS, 0.0 if i * trials + k in failing else 1.0)
            for i in range(n)
            for k in range(trials)
        }
    else:
        plan = {i: (CALLS, 0.0 if i in failing else 1.0) for i in range(n)}
    return record(path, plan)


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    return {
        "a": _run(tmp_path / "a.jsonl", {0, 1}),
        "a2": _run(tmp_path / "a2.jsonl", {0, 2}),  # the same config: one flips each way
        "b": _run(tmp_path / "b.jsonl", {0, 1, 3, 4, 5, 6, 7, 8}),  # 6 regressions
        "c": _run(tmp_path / "c.jsonl", {0}),  # one improvement
    }


def _cli(*args: Any) -> Any:
    return CliRunner().invoke(main, ["diff", *map(str, args)])


def test_noise_floor_by_hand(runs: dict[str, Path]) -> None:
    many = diff_many([runs["a"], runs["b"]], baseline=runs["a2"])
    d = many.diffs[0]
    assert d.noise is not None and d.noise.baseline == str(runs["a2"])
    m = {row.metric: row for row in d.noise.metrics}
    # A vs B: 6 of 20 regressed, mean -0.3; A vs A2: 1 up, 1 down, mean 0
    assert (m["mean reward delta"].observed, m["mean reward delta"].noise) == (-0.3, 0.0)
    assert m["mean reward delta"].excess == 0.3 and m["mean reward delta"].exceeds
    changed = m["episodes whose reward changed"]
    assert (changed.observed, changed.noise) == (0.3, 0.1)
    assert changed.excess == pytest.approx(0.2)
    assert m["episodes regressed"].observed == 0.3 and m["episodes regressed"].noise == 0.05
    assert m["tokens"].observed == 0 and m["tokens"].exceeds is False  # same calls, same usage
    assert m["cost"].observed is None and m["cost"].exceeds is None  # no cost recorded
    assert many.noise is not None and many.noise.stats is not None
    assert (many.noise.stats.improved, many.noise.stats.regressed) == (1, 1)


def test_two_runs_with_a_baseline_on_the_command_line(runs: dict[str, Path]) -> None:
    res = _cli(runs["a"], runs["b"], "--baseline", runs["a2"])
    assert res.exit_code == 1, res.output
    out = res.output
    assert "noise floor: A vs B against A vs" in out
    row = next(line for line in out.splitlines() if line.startswith("mean reward delta"))
    assert row.split() == ["mean", "reward", "delta", "\u22120.3", "0", "exceeds", "noise"]
    assert "McNemar (exact binomial)   p = 0.0312 (0 improved vs 6 regressed)" in out
    assert "B is worse than A: significant at 0.05" in out
    data = orjson.loads(
        _cli(runs["a"], runs["b"], "--baseline", runs["a2"], "--format", "json").output
    )
    VALIDATOR.validate(data)
    assert data["format"] == "rollout-cassette/diff" and data["noise"]["baseline"] == str(
        runs["a2"]
    )
    md = _cli(runs["a"], runs["b"], "--baseline", runs["a2"], "--format", "markdown").output
    assert "### Noise floor: A vs B against A vs" in md
    assert "| mean reward delta | \u22120.3 | 0 | **exceeds noise** |" in md


def test_many_runs_one_table(runs: dict[str, Path], tmp_path: Path) -> None:
    page = tmp_path / "many.html"
    res = _cli(runs["a"], runs["b"], runs["c"], runs["a2"], "--html", page)
    assert res.exit_code == 1, res.output
    lines = [line for line in res.output.splitlines() if not line.startswith("wrote ")]
    assert lines[0] == "cassette diff  4 runs against A"
    table = [line.split() for line in lines if line[:2] in ("B ", "C ", "D ")]
    rows = {row[0]: row for row in table if row[1] == "20"}
    assert rows["B"][1:4] == ["20", "0.6", "\u22120.3"] and rows["B"][7:10] == ["0", "6", "6"]
    assert rows["C"][1:4] == ["20", "0.95", "+0.05"] and rows["C"][7:10] == ["1", "0", "1"]
    # the top cause of each run, in short, under the table (same calls: only the reward)
    assert "top cause: B 6 outcome only; C 1 outcome only; D 2 outcome only" in lines
    data = orjson.loads(_cli(runs["a"], runs["b"], runs["c"], "--format", "json").output)
    VALIDATOR.validate(data)
    assert data["format"] == "rollout-cassette/diff-many" and len(data["diffs"]) == 2
    assert [d["b"]["label"] for d in data["diffs"]] == [str(runs["b"]), str(runs["c"])]
    assert data["diffs"][0]["stats"]["tests"][0]["p_value"] == 2 / 64
    html = page.read_text()
    assert 'id="runs"' in html and html.count('<section id="diff-') == 3
    md = _cli(runs["a"], runs["b"], runs["c"], "--format", "markdown").output
    assert md.startswith("## ❌ cassette diff: 3 runs against A")
    assert f"| B `{runs['b']}` | 20 | 0.6 | \u22120.3 |" in md
    # the same run twice: equivalent, exit 0
    assert _cli(runs["a"], runs["a"], runs["a"]).exit_code == 0


def test_run_count_limits(runs: dict[str, Path]) -> None:
    res = _cli(*[runs["a"]] * 9)
    assert res.exit_code == 2 and "diff takes 2 to 8 runs, got 9" in res.output
    assert _cli(runs["a"]).exit_code == 2
    with pytest.raises(ValueError, match="2 to 8 runs"):
        diff_many([runs["a"]])
    res = _cli(runs["a"], runs["b"], "--baseline", "missing.jsonl")
    assert res.exit_code == 2 and "no such file or directory: missing.jsonl" in res.output


def test_schema_is_valid_and_printed() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    res = _cli("--schema")
    assert res.exit_code == 0 and orjson.loads(res.output) == SCHEMA


def test_tau2_trials_report_pass_k(tmp_path: Path) -> None:
    # 4 tasks x 3 trials; A fails 1 trial of task 0; B fails every trial of tasks 0 and 1
    a = _run(tmp_path / "a.jsonl", {0}, n=4, trials=3)
    b = _run(tmp_path / "b.jsonl", {0, 1, 2, 3, 4, 5}, n=4, trials=3)
    d = diff_runs(a, b)
    assert d.stats is not None and d.stats.tasks == 4
    got = {r.k: (r.a, r.b) for r in d.stats.pass_k}
    assert got[1] == pytest.approx(((2 / 3 + 3) / 4, 0.5))
    assert got[3] == pytest.approx((0.75, 0.5))
    res = _cli(a, b, "--format", "json")
    data = orjson.loads(res.output)
    VALIDATOR.validate(data)
    assert [r["k"] for r in data["stats"]["pass_k"]] == [1, 2, 3]
    text = _cli(a, b).output
    assert "4 tasks" in text and any(line.split()[:1] == ["pass^3"] for line in text.splitlines())


def test_markdown_fits_a_github_comment(tmp_path: Path) -> None:
    long = "x" * 400
    plan_a = {i: ([("lookup", {"q": f"{long}{i}"})] * 3, 1.0) for i in range(120)}
    plan_b = {i: ([plan_a[i][0][0], ("lookup", {"q": "y"})], 0.0) for i in range(120)}
    d = diff_runs(record(tmp_path / "a.jsonl", plan_a), record(tmp_path / "b.jsonl", plan_b))
    # 120 episodes in full are too long for a comment: fewer are shown, and counted
    assert len(render_markdown(d, limit=120, budget=10**9)) > 65_536
    md = render_markdown(d, limit=120)
    assert len(md) <= 65_536 and "### Regressed (120)" in md
    assert "… and 110 more (run `cassette diff --format json`)" in md
    none = render_markdown(d, budget=3000)  # no episode fits: the tables are counted only
    assert len(none) <= 3000
    end = "### Regressed (120)\n\n… and 120 episodes (run `cassette diff --format json`)\n"
    assert none.endswith(end)
    tiny = render_markdown(d, budget=800)  # not even the summary: cut, with a note
    assert (
        len(tiny) <= 800 and tiny.endswith("for all)\n") and "cut to fit a GitHub comment" in tiny
    )
    many = diff_many([tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "a.jsonl"])
    assert len(render_many_markdown(many, budget=2000)) <= 2000
