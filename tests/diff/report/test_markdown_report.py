"""render_markdown on the golden diff: a summary table, regressed episodes first, folded
details, safe table cells."""

from __future__ import annotations

from pathlib import Path

from cassette.diff import diff_runs
from cassette.diff.report import render_markdown

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "diff"
A, RERUN, B = GOLDEN / "run_a.jsonl", GOLDEN / "run_a_rerun.jsonl", GOLDEN / "run_b.jsonl"
CITY = "response.choices[0].message.tool_calls[0].function.arguments.city"
M = "\u2212"


def test_summary_table_and_sections() -> None:
    md = render_markdown(diff_runs(A, B, labels=("runs/a.jsonl", "runs/b.jsonl")))
    lines = md.splitlines()
    assert lines[0] == "## ❌ cassette diff: `runs/a.jsonl` → `runs/b.jsonl`"
    assert "**not equivalent: 3 diverged, 1 only in A, 1 only in B (of 6 episodes)**" in lines
    assert f"| | A `runs/a.jsonl` | B `runs/b.jsonl` | B {M} A |" in lines
    assert "| episodes | 5 | 5 | |" in lines
    assert f"| mean reward | 0.8 | 0.7 | **{M}0.1** |" in lines
    assert f"| tokens | 2,004 | 1,946 | {M}58 |" in lines
    assert f"| cost | $0.000392 | $0.000376 | {M}$0.000017 |" in lines
    regressed, other, only = (
        md.index("### Regressed (1)"),
        md.index("### Other diverged episodes (2)"),
        md.index("### Only in one run (2)"),
    )
    assert regressed < other < only
    row = next(line for line in lines if line.startswith("| `1` |"))
    assert row == (
        f'| `1` | 1 | 0 | **{M}1** | llm step 2 response `{CITY}`: `"Lyon"` → `"Paris"` |'
    )
    assert any(line.startswith("| `2` | 0 | 1 | **+1** |") for line in lines)
    assert any(line.startswith("| `5` | 1 | 1 | 0 |") for line in lines)
    assert "| `3` | only in A | 1 | 4 |" in lines and "| `4` | only in B | 0.5 | 3 |" in lines
    assert md.count("<details>") == md.count("</details>") == 3
    assert '- tool calls B (3): 0:`get_weather({"city":"Paris"})`' in md
    assert "<sub>Ignored as volatile" in md and "`response.id`" in md


def test_equivalent_and_escaping() -> None:
    md = render_markdown(diff_runs(A, RERUN, labels=("a|b.jsonl", "c`d.jsonl")))
    assert md.startswith("## ✅ cassette diff: `a\\|b.jsonl` → ``c`d.jsonl``")
    assert "**equivalent: all 5 episodes identical**" in md
    # nothing to list but the statistics (all unchanged: nothing to test)
    assert [line for line in md.splitlines() if line.startswith("###")] == ["### Statistics"]
    header = next(line for line in md.splitlines() if line.startswith("| | A"))
    assert header.count(" | ") == 3  # the label's pipe does not open a column


def test_runs_without_a_recorded_cost_say_so_as_stats_does(tmp_path: Path) -> None:
    from click.testing import CliRunner

    import cassette
    from cassette.cli import main

    paths = []
    for name, content in (("a", "4"), ("b", "5")):
        path = tmp_path / f"{name}.jsonl"
        answer = {"choices": [{"message": {"role": "assistant", "content": content}}]}
        answer["usage"] = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        with cassette.open(path, "record") as cas:
            cas.call({"messages": [{"role": "user", "content": "2+2"}]}, live=lambda a=answer: a)
        paths.append(path)
    result = diff_runs(*paths)
    assert result.a.cost is None and result.b.cost is None
    lines = render_markdown(result).splitlines()
    assert "| cost | not recorded | not recorded | - |" in lines
    assert not any("$0" in line for line in lines)
    assert result.to_dict()["a"]["cost"] is None
    stats = CliRunner().invoke(main, ["stats", str(paths[0])]).stdout
    assert "- (no call recorded a cost)" in stats
    # a cost recorded on one side only: that side's total, no difference
    with cassette.open(paths[1], "record") as cas:
        answer = {"choices": [{"message": {"role": "assistant", "content": "4"}}]}
        answer["usage"] = {"prompt_tokens": 3, "completion_tokens": 1, "cost": 0.002}
        cas.call({"messages": [{"role": "user", "content": "2+2"}]}, live=lambda: answer)
    lines = render_markdown(diff_runs(*paths)).splitlines()
    assert "| cost | not recorded | $0.002000 | - |" in lines
