"""The HTML report of the golden diff, loaded in real headless Chromium.

Chromium's own flags do the work: ``--dump-dom`` prints the DOM after the page's scripts
ran, ``--screenshot`` saves a PNG. Without Debian's ``chromium`` package the tests skip,
naming the install command; with ``CASSETTE_REQUIRE_BROWSER=1`` (as in CI) they fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import cassette
from cassette.diff import RunDiff, diff_runs
from cassette.diff.report import render_html
from tests.helpers.browser import Dom, chromium

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "diff"
A, B = GOLDEN / "run_a.jsonl", GOLDEN / "run_b.jsonl"


@pytest.fixture(scope="module")
def golden() -> RunDiff:
    return diff_runs(A, B, labels=("run_a.jsonl", "run_b.jsonl"))


@pytest.mark.slow
def test_report_in_chromium_has_the_summary_and_the_highlighted_step(
    golden: RunDiff, tmp_path: Path
) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(golden), encoding="utf-8")
    dom = Dom(chromium(tmp_path, "--dump-dom", page.as_uri()))
    # the runs summary at the top
    assert dom.text("mean-reward-a") == "0.8" and dom.text("mean-reward-b") == "0.7"
    assert dom.text("mean-reward-delta") == "\u22120.1"
    assert dom.text("tokens-a") == "2,004" and dom.text("tokens-b") == "1,946"
    assert dom.text("episodes-a") == "5" and dom.text("episodes-b") == "5"
    assert dom.text("count-regressed") == "1 regressed"
    assert dom.text("count-diverged") == "3 diverged"
    assert dom.text("verdict").startswith("not equivalent: 3 diverged")
    # the first divergence of episode 1, highlighted, with both tool calls as blocks
    assert "divergence" in dom.classes("ep-1-divergence")
    step = dom.text("ep-1-divergence")
    assert step.count("llm · step 2") == 2
    assert "book_trip" in step and '"city": "Lyon"' in step and '"city": "Paris"' in step
    assert "divergence" in dom.classes("ep-2-divergence")
    assert "Rainy and cold" in dom.text("ep-2-divergence")
    assert "ep-0-divergence" not in dom.by_id  # identical: nothing highlighted
    note = dom.text("ep-1")
    assert "response.choices[0].message.tool_calls[0].function.arguments.city" in note
    # a screenshot, for people (and for checking the page by eye)
    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


@pytest.mark.slow
def test_sorting_by_reward_delta_on_load_and_by_clicking(golden: RunDiff, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(golden), encoding="utf-8")
    assert Dom(page.read_text()).rows == ["0", "1", "2", "3", "4", "5"]
    asc = Dom(chromium(tmp_path, "--dump-dom", page.as_uri() + "?sort=delta"))
    assert asc.rows == ["1", "0", "5", "2", "3", "4"]  # worst first; no delta last
    assert asc.by_id["episodes"][1]["data-sorted"] == "delta:asc"
    desc = Dom(chromium(tmp_path, "--dump-dom", page.as_uri() + "?sort=delta&dir=desc"))
    assert desc.rows == ["2", "0", "5", "1", "3", "4"]
    # click the header twice (ascending, then descending) and record the orders
    probe = """<script>
    function order() {
      return Array.prototype.map.call(
        document.querySelectorAll("#episodes tbody tr"), function (r) { return r.dataset.env; }
      ).join(",");
    }
    var th = document.querySelector('th[data-sort="delta"]');
    th.click(); document.body.dataset.first = order() + "|" + th.getAttribute("aria-sort");
    th.click(); document.body.dataset.second = order() + "|" + th.getAttribute("aria-sort");
    </script></body>"""
    clicked = tmp_path / "clicked.html"
    clicked.write_text(page.read_text().replace("</body>", probe), encoding="utf-8")
    body = Dom(chromium(tmp_path, "--dump-dom", clicked.as_uri())).attrs_of["body"]
    assert body["data-first"] == "1,0,5,2,3,4|ascending"
    assert body["data-second"] == "2,0,5,1,3,4|descending"


def test_self_contained_and_escaped(tmp_path: Path) -> None:
    evil = "<script>alert(1)</script> & <b>bold</b>"
    for name, text in (("a", evil), ("b", evil + "!")):
        with cassette.open(tmp_path / f"{name}.jsonl", "record") as cas:
            req = {"model": "m", "messages": [{"role": "user", "content": evil}]}
            resp = {"choices": [{"message": {"role": "assistant", "content": text}}]}
            cas.call(req, live=lambda r=resp: r, env_index="<i>env</i>")
    diff = diff_runs(tmp_path / "a.jsonl", tmp_path / "b.jsonl", labels=("<a>", '"b"'))
    page = render_html(diff)
    assert "<script>alert(1)" not in page and "<i>env</i>" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;bold&lt;/b&gt;" in page
    assert "&lt;i&gt;env&lt;/i&gt;" in page and "&quot;b&quot;" in page
    assert page.count("<script>") == 1  # the page's own sorting script, inline
    assert not re.search(r"https?://|<link|\ssrc=|@import", page)
