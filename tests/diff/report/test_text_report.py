"""render_text on the golden diff (tests/fixtures/diff)."""

from __future__ import annotations

from pathlib import Path

from cassette.diff import diff_runs
from cassette.diff.report import render_text

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "diff"
A, RERUN, B = GOLDEN / "run_a.jsonl", GOLDEN / "run_a_rerun.jsonl", GOLDEN / "run_b.jsonl"


def test_plain_text_names_the_divergence_values_and_totals() -> None:
    out = render_text(diff_runs(A, B, labels=("a.jsonl", "b.jsonl")), color=False)
    assert "\x1b[" not in out
    lines = out.splitlines()
    assert lines[0] == "cassette diff  A: a.jsonl  B: b.jsonl"
    mean = next(line for line in lines if line.startswith("mean reward"))
    assert mean.split() == ["mean", "reward", "0.8", "0.7", "\u22120.1"]
    tokens = next(line for line in lines if line.startswith("tokens"))
    assert tokens.split() == ["tokens", "2,004", "1,946", "\u221258"]
    assert "episodes: 6  identical 1, diverged 3, only in A 1, only in B 1" in out
    assert "reward:   improved 1, regressed 1, unchanged 2" in out
    assert "episode 1  diverged  reward 1 → 0 (\u22121) regressed" in out
    assert "at response.choices[0].message.tool_calls[0].function.arguments.city" in out
    assert '    A              "Lyon"' in out and '    B              "Paris"' in out
    # the tool calls aligned side by side: two the same, then the changed booking
    row = next(line for line in lines if 'book_trip({"city":"Lyon"' in line)
    assert row.split()[0] == "~" and 'book_trip({"city":"Paris"' in row
    assert out.count('= get_weather({"city":"Paris"})') == 1
    # the statistics and the grouped causes
    assert "  McNemar (exact binomial)   p = 1 (1 improved vs 1 regressed)" in lines
    assert "  unchanged / still failing  2 / 0" in lines
    assert "3 episodes diverged because the model's own output changed" in out
    assert "episode 3  only in A  reward 1" in out and "episode 4  only in B  reward 0.5" in out
    # regressed first, then the other diverged episodes, then the one-sided ones
    order = [out.index(f"episode {n}  ") for n in (1, 2, 5, 3, 4)]
    assert order == sorted(order)
    assert "episode 0" not in out  # identical episodes are only counted
    assert lines[-1] == "not equivalent: 3 diverged, 1 only in A, 1 only in B (of 6 episodes)"


def test_equivalent_runs_and_the_volatile_fields() -> None:
    out = render_text(diff_runs(A, RERUN), color=False)
    assert out.splitlines()[-1] == "equivalent: all 5 episodes identical"
    assert "ignored as volatile" in out and "response.system_fingerprint" in out


def test_colour_and_limit() -> None:
    diff = diff_runs(A, B)
    coloured = render_text(diff, color=True)
    assert "\x1b[" in coloured and "\x1b[31m" in coloured  # the regression in red
    short = render_text(diff, color=False, limit=2)
    assert "… and 3 more episodes that differ (see --format json)" in short
    assert "episode 5  " not in short


def test_long_tool_call_sequences_are_cut_around_the_divergence() -> None:
    from cassette.diff import ToolCall
    from cassette.diff.report.common import tool_line

    calls = [ToolCall("llm", i, "lookup", {"i": i}) for i in range(50)]
    line = tool_line(calls, focus=20)
    assert line.startswith('… 17 earlier → lookup({"i":17})')
    assert 'lookup({"i":20})' in line and line.endswith("→ … 25 more")
    assert tool_line(calls[:3]) == 'lookup({"i":0}) → lookup({"i":1}) → lookup({"i":2})'
    assert tool_line([]) == "(none)"


def test_continuous_rewards_get_a_permutation_and_a_wilcoxon_test(tmp_path: Path) -> None:
    from tests.helpers.runs import record

    calls = [("lookup", {"city": "Oslo"})]
    a = record(tmp_path / "a.jsonl", {i: (calls, 0.1 * (i % 5)) for i in range(12)})
    # deltas: +0.25 nine times, -0.1 three times
    b_rewards = {i: 0.1 * (i % 5) + (0.25 if i < 9 else -0.1) for i in range(12)}
    b = record(tmp_path / "b.jsonl", {i: (calls, r) for i, r in b_rewards.items()})
    lines = render_text(diff_runs(a, b), color=False).splitlines()
    rows = {line.split("  ")[1]: line.split("  ")[-1].strip() for line in lines if "  p " in line}
    # scipy.stats.permutation_test(..., permutation_type="samples"): 34 of 4,096 (exact)
    assert rows["paired permutation (exact)"] == "p = 0.0083"
    # ties: the normal approximation, scipy.stats.wilcoxon(method="approx", correction=False)
    assert rows["Wilcoxon signed-rank (normal)"] == "p = 0.00649"
    assert any(
        line.split() == ["unchanged", "/", "still", "failing", "0", "/", "0"] for line in lines
    )
    assert any("B is better than A: significant at 0.05 (p = 0.0083" in line for line in lines)
