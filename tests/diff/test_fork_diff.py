"""cassette diff BASE NEW where NEW is a fork of BASE (cassette.replay.fork): the "fork" records
are not calls; each forked episode shows where it forked, in every format (issue 14)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from click.testing import CliRunner

import cassette
from cassette import fork
from cassette.cli import main
from cassette.diff import RunDiff, diff_runs
from cassette.diff.report import render_html, render_json, render_markdown, render_text
from cassette.diff.schema import SCHEMA
from cassette.format.runid import set_run_id
from cassette.storage.index import load_index
from tests.conftest import MakeServer
from tests.replay.test_fork import run_loops


@pytest.fixture
def runs(make_server: MakeServer, tmp_path: Path) -> tuple[Path, Path]:
    """A base of 3 episodes x 4 steps, and a fork of it: episode 0 replayed whole, episode 1
    forked where its request differs (llm step 2), episode 2 forked by name at step 3."""
    base, new = tmp_path / "base.jsonl", tmp_path / "new.jsonl"
    with cassette.open(base, mode="record") as cas:
        run_loops(cas, make_server("random").base_url)
    with fork(new, from_cassette=base, fork_at={2: 3}) as cas:
        run_loops(cas, make_server("random").base_url, changed={1: 1})
    return base, new


@pytest.fixture
def diff(runs: tuple[Path, Path]) -> RunDiff:
    return diff_runs(*runs, labels=("base", "new"))


def test_fork_records_are_not_calls(diff: RunDiff, runs: tuple[Path, Path]) -> None:
    ep0, ep1, ep2 = diff.episodes
    assert ep0.status == "identical" and ep0.fork is None and ep0.divergence is None
    assert ep1.fork == {
        "base": str(runs[0]),
        "base_run": set_run_id(load_index([runs[0]]).headers),
        "channel": "llm",
        "step": 2,
        "why": "mismatch",
    }
    assert ep2.fork is not None and (ep2.fork["step"], ep2.fork["why"]) == (3, "fork_at")
    # the first divergence is the fork point, on channel llm; the fork record is not a step
    for ep, step, part in ((ep1, 2, "request"), (ep2, 3, "response")):
        assert ep.divergence is not None
        assert (ep.divergence.channel, ep.divergence.step, ep.divergence.part) == (
            "llm",
            step,
            part,
        )
        assert ep.steps_a == ep.steps_b == 4
        assert all(c.channel == "llm" for c in ep.tool_calls_b)
    assert diff.a.interactions == diff.b.interactions == 12
    assert diff.forks == {"forked": 2, "at_fork_point": 2}
    assert diff.counts["identical"] == 1 and diff.counts["diverged"] == 2


def test_text_and_markdown_show_the_fork_points(diff: RunDiff) -> None:
    text = render_text(diff, width=160)
    assert "forks:    2 episodes forked; first divergence at the fork point in 2" in text
    assert re.search(r"fork\s+forked at llm step 2 \(mismatch\)", text)
    assert re.search(r"fork\s+forked at llm step 3 \(fork_at\)", text)
    assert "channel fork" not in text and "fork step 0" not in text
    md = render_markdown(diff)
    assert "forks: 2 episodes forked; first divergence at the fork point in 2" in md
    assert "| forked at llm step 2 (mismatch); llm step 2 request" in md
    assert "- forked at llm step 3 (fork_at)" in md


def test_html_shows_the_fork_points_and_no_fork_step(diff: RunDiff) -> None:
    page = render_html(diff)
    assert '<li id="count-forked">2 episodes forked; first divergence at the fork point' in page
    assert '<div class="note fork">forked at llm step 2 (mismatch)</div>' in page
    assert '<span class="fork">forked at llm step 3 (fork_at)</span>' in page
    assert "fork · step 0" not in page and "llm · step 3" in page


def test_json_and_cli_carry_the_fork_points(diff: RunDiff, runs: tuple[Path, Path]) -> None:
    data = orjson.loads(render_json(diff))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert data["forks"] == {"forked": 2, "at_fork_point": 2}
    assert [e["fork"] and e["fork"]["step"] for e in data["episodes"]] == [None, 2, 3]
    res = CliRunner().invoke(main, ["diff", str(runs[0]), str(runs[1])])
    assert res.exit_code == 1, res.output
    assert "2 episodes forked; first divergence at the fork point in 2" in res.output
    assert "forked at llm step 2 (mismatch)" in res.output


def test_a_fork_diffed_against_itself_is_equivalent(runs: tuple[Path, Path]) -> None:
    same: Any = diff_runs(runs[1], runs[1])
    assert same.equivalent and same.forks == {"forked": 2, "at_fork_point": 0}
    assert "first divergence at the fork point in 0" in render_text(same)
