"""The page of ``cassette view`` in real headless Chromium (DevTools protocol over a pipe):
the run and its table, an episode's messages, tool calls and MCP calls, filters, search,
keyboard navigation, deep links, two runs side by side with the first divergence, a fork
point, both widths and themes; never a console error, never a request to another host."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.view import build_page, load_run, write_page
from fixtures.cdp import Browser, Page


def page_of(tmp_path: Path, *runs: Path, name: str = "view.html") -> str:
    out = tmp_path / name
    write_page(build_page([load_run(r, r.name) for r in runs]), out)
    return out.as_uri()


def text(page: Page, selector: str) -> str:
    return str(
        page.eval(
            f"[...document.querySelectorAll({json.dumps(selector)})]"
            ".map(e => e.textContent).join('\\n')"
        )
    )


def count(page: Page, selector: str) -> int:
    return int(page.eval(f"document.querySelectorAll({json.dumps(selector)}).length"))


def clean(page: Page, url: str) -> None:
    """No console error, and no request but the page itself."""
    assert page.errors == []
    own = url.split("#")[0]
    assert {r.split("#")[0] for r in page.requests} <= {own}, page.requests


def test_run_table_and_an_episode_with_tool_and_mcp_calls(
    agent_runs: tuple[Path, Path], browser: Browser, tmp_path: Path
) -> None:
    url = page_of(tmp_path, agent_runs[0])
    page = browser.open(url)
    assert count(page, "#episodes tbody tr") == 4
    assert "4 of 4 episodes" in text(page, "#count")
    assert "run id" in text(page, "#run") and "mean reward" in text(page, "#run")
    page.goto(url + "#run=0&episode=0")
    page.wait("document.getElementById('calls')")
    chat = text(page, "#calls")
    assert "What is the weather in Lisbon today?" in chat  # the user's message
    assert "→ weather" in text(page, ".tool-call .tool-name")  # the model's tool call
    channels = page.eval(
        "[...document.querySelectorAll('#calls .call')].map(c => c.dataset.channel)"
    )
    assert "mcp" in channels[channels.index("llm") :]  # the tool call between model calls
    assert "reward" in text(page, ".outcome")
    clean(page, url)


def test_filters_search_sort_and_keys(
    agent_runs: tuple[Path, Path], browser: Browser, tmp_path: Path
) -> None:
    url = page_of(tmp_path, agent_runs[0])
    page = browser.open(url)
    page.eval(
        "(() => { const s = document.getElementById('search'); s.value = 'alpha';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    page.wait("document.getElementById('count').textContent.startsWith('1 of')")
    assert page.eval("document.querySelector('#episodes tbody tr').dataset.key") == "3"
    page.eval(
        "(() => { const s = document.getElementById('search'); s.value = '';"
        " s.dispatchEvent(new Event('input')); })()"
    )
    page.wait("document.getElementById('count').textContent.startsWith('4 of')")
    page.eval("document.querySelector('th[data-key=key]').click()")  # descending
    keys = page.eval("[...document.querySelectorAll('#episodes tbody tr')].map(r => r.dataset.key)")
    assert keys == ["3", "2", "1", "0"]
    page.eval(
        "(() => { const s = document.getElementById('f-channel'); s.value = 'nothing';"
        " s.dispatchEvent(new Event('change')); })()"
    )  # not an option: no filter
    page.goto(url + "#run=0&episode=3")  # a deep link, then the keys
    page.wait("document.getElementById('episode-title')")
    page.key("j")
    page.wait("document.getElementById('episode-title').textContent === 'episode 2'")
    page.key("k")
    page.wait("document.getElementById('episode-title').textContent === 'episode 3'")
    page.key("Escape")
    page.wait("document.getElementById('episodes')")
    clean(page, url)


def test_two_runs_side_by_side_with_first_divergence_and_stats(
    agent_runs: tuple[Path, Path], browser: Browser, tmp_path: Path
) -> None:
    url = page_of(tmp_path, *agent_runs)
    page = browser.open(url)
    assert "paired" in text(page, "#diff-stats")
    statuses = page.eval(
        "[...document.querySelectorAll('#episodes tbody tr td:nth-child(10)')]"
        ".map(td => td.textContent)"
    )
    assert "diverged" in statuses
    diverged = page.eval(
        "document.querySelector('#episodes tbody tr td:nth-child(10)') && "
        "[...document.querySelectorAll('#episodes tbody tr')].find(r => "
        "r.children[9].textContent === 'diverged').dataset.key"
    )
    page.goto(f"{url}#run=0&episode={diverged}")
    page.wait("document.querySelector('.side')")
    assert count(page, ".side .col-head") == 2
    assert count(page, ".call.diverged") == 2  # the same step, marked in both columns
    assert "first divergence" in text(page, "#divergence")
    clean(page, url)


def test_fork_point_and_recorded_error_are_shown(browser: Browser, tmp_path: Path) -> None:
    path = tmp_path / "forked.jsonl"
    with cassette.open(path, "record") as cas:
        point = {
            "base": "runs/a.jsonl",
            "base_run": "abc",
            "channel": "llm",
            "step": 1,
            "why": "mismatch",
        }
        cas.call({"fork": True}, live=lambda: point, env_index=0, channel="fork", step=0)
        request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

        def fail() -> Any:
            raise ValueError("the model is down")

        with pytest.raises(ValueError, match="down"):
            cas.call(request, live=fail, env_index=0)
    url = page_of(tmp_path, path)
    page = browser.open(url + "#run=0&episode=0")
    page.wait("document.getElementById('calls')")
    assert "forked from runs/a.jsonl at llm step 1 (mismatch)" in text(page, ".fork-point")
    assert "the model is down" in text(page, ".call .error")
    clean(page, url)


@pytest.mark.parametrize("width", [390, 1280])
def test_page_fits_both_widths_and_switches_theme(
    agent_runs: tuple[Path, Path], width: int, tmp_path: Path, new_browser: Callable[..., Browser]
) -> None:
    url = page_of(tmp_path, *agent_runs)
    with new_browser() as b:
        page = b.open(url + "#run=0&episode=1", width=width)
        page.wait("document.getElementById('calls')")
        assert page.eval("document.documentElement.scrollWidth") <= width
        before = page.eval("getComputedStyle(document.body).backgroundColor")
        page.key("t")
        page.wait(f"getComputedStyle(document.body).backgroundColor !== {json.dumps(before)}")
        page.goto(url)
        assert page.eval("document.documentElement.scrollWidth") <= width
        clean(page, url)


def test_written_page_is_private(agent_runs: tuple[Path, Path], tmp_path: Path) -> None:
    page_of(tmp_path, agent_runs[0])
    assert stat.S_IMODE((tmp_path / "view.html").stat().st_mode) == 0o600


def test_a_crash_cut_last_line_is_a_warning_on_the_page(browser: Browser, tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    with cassette.open(path, "record") as cas:
        request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        cas.call(request, live=lambda: {"choices": [{"message": {"content": "hello"}}]})
    with path.open("a") as out:
        out.write('{"type": "interaction", "env_index": 0, "chan')
    url = page_of(tmp_path, path)
    page = browser.open(url)
    assert "cut.jsonl" in text(page, "#warnings")


def test_a_streamed_answer_expands_to_its_chunks(browser: Browser, tmp_path: Path) -> None:
    path = tmp_path / "streamed.jsonl"
    pieces = ["The ", "answer ", "is 42."]
    chunks = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    with cassette.open(path, "record") as cas:
        request = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "?"}]}
        got = list(cas.stream(request, live=lambda: iter(chunks)))
    assert got == chunks
    url = page_of(tmp_path, path)
    page = browser.open(url + "#run=0&episode=0")
    page.wait("document.getElementById('calls')")
    assert "streamed: 3 chunks" in text(page, ".chunks summary")
    page.eval("document.querySelector('.chunks').open = true")
    shown = text(page, ".chunks pre")
    assert all(p in shown for p in pieces) and shown.count("\n") == 2  # a chunk a line
    clean(page, url)
