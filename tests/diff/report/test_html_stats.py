"""The HTML report's statistics, grouped causes, noise floor and aligned tool calls, as
headless Chromium renders them (skipped without Chromium, as test_html_report)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cassette.diff import diff_many
from cassette.diff.report import render_html, render_many_html
from tests.helpers.browser import Dom, chromium
from tests.helpers.runs import record

CALLS = [("lookup", {"city": "Oslo"}), ("lookup", {"city": "Rome"}), ("book", {"day": 1})]


@pytest.fixture
def runs(tmp_path: Path) -> list[Path]:
    plan = {i: (CALLS, 0.0 if i == 0 else 1.0) for i in range(10)}
    b_plan = dict(plan)
    for i in (1, 2, 3, 4):  # B skips the second lookup and books another day: regressed
        b_plan[i] = ([CALLS[0], ("book", {"day": 2})], 0.0)
    return [
        record(tmp_path / "a.jsonl", plan),
        record(tmp_path / "b.jsonl", b_plan),
        record(tmp_path / "a2.jsonl", plan),
    ]


@pytest.mark.slow
def test_statistics_causes_noise_and_alignment_in_chromium(
    runs: list[Path], tmp_path: Path
) -> None:
    many = diff_many(runs[:2], baseline=runs[2], labels=["a", "b", "a2"])
    page = tmp_path / "report.html"
    page.write_text(render_html(many.diffs[0]), encoding="utf-8")
    dom = Dom(chromium(tmp_path, "--dump-dom", page.as_uri()))
    assert dom.text("stat-paired-episodes") == "10 (rewarded in both runs)"
    assert dom.text("stat-improved-regressed") == "0 / 4"
    assert dom.text("stat-unchanged-still-failing") == "5 / 1"
    assert dom.text("stat-mcnemar-exact-binomial") == "p = 0.125 (0 improved vs 4 regressed)"
    assert dom.text("stat-mean-reward-delta").startswith("\u22120.4, 95% CI [")
    assert dom.text("stat-verdict").startswith("not significant at 0.05 (p = 0.125")
    assert dom.text("cause-model_output").startswith(
        "4 episodes diverged because the model's own output changed"
    )
    # (Dom.text joins the cells' texts)
    assert dom.text("noise-mean-reward-delta") == "mean reward delta\u22120.40exceeds noise"
    assert "exceeds" in dom.classes("noise-mean-reward-delta")
    # episode 1 aligned: the first lookup the same, the second deleted, the booking changed
    rows = [dom.by_id[f"ep-1-call-{k}"][1]["class"] for k in range(3)]
    assert rows == ["op-same", "op-deleted", "op-changed"]
    assert dom.text("ep-1-call-1") == '\u2212lookup({"city":"Rome"})'
    assert dom.text("ep-1-call-2") == '~book({"day":1})book({"day":2})'
    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2400", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_many_runs_page_in_chromium(runs: list[Path], tmp_path: Path) -> None:
    many = diff_many([runs[0], runs[1], runs[2]], labels=["a", "b", "c"])
    page = tmp_path / "many.html"
    page.write_text(render_many_html(many), encoding="utf-8")
    dom = Dom(chromium(tmp_path, "--dump-dom", page.as_uri()))
    # (Dom.text joins the cells' texts: run, episodes, reward, delta, CI, p, ...)
    assert dom.text("run-0") == "A a100.9"
    assert dom.text("run-1").startswith("B b100.5\u22120.4[")
    assert dom.text("run-2") == "C c100.90[0, 0]1000"
    assert "diff-1" in dom.by_id and "diff-2" in dom.by_id
