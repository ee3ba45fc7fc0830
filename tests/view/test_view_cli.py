"""``cassette view`` as a user runs it: a page written to a file (private), a page served
from 127.0.0.1 until Ctrl-C, one-line errors for bad input, and whatever a cassette holds
(script tags, onerror handlers) shown as text and never run."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import cassette
from fixtures.cdp import Browser
from tests.helpers.cli import REPO, cassette_cli, one_line_error

PAYLOADS = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "</script><script>window.__pwned = 3</script>",
    '"><svg onload="window.__pwned = 4">',
]


def hostile_cassette(path: Path) -> Path:
    """Every place a cassette holds text carries a payload: messages, tool arguments,
    episode names, meta, outcome info, errors."""
    with cassette.open(path, "record") as cas:
        for i, payload in enumerate(PAYLOADS):
            request = {
                "model": payload,
                "messages": [
                    {"role": "system", "content": payload},
                    {"role": "user", "content": [{"type": "text", "text": payload}]},
                ],
            }
            answer = {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": payload,
                            "tool_calls": [
                                {
                                    "id": "c",
                                    "type": "function",
                                    "function": {
                                        "name": payload,
                                        "arguments": json.dumps({"q": payload}),
                                    },
                                }
                            ],
                        }
                    }
                ]
            }
            cas.call(request, live=lambda a=answer: a, env_index=payload)
            cas.outcome(payload, reward=float(i), terminated=True, info={"note": payload})
    return path


def test_hostile_text_is_shown_as_text_and_never_runs(
    tmp_path: Path, new_browser: Callable[..., Browser]
) -> None:
    path = hostile_cassette(tmp_path / "hostile.jsonl")
    out = tmp_path / "hostile.html"
    proc = cassette_cli("view", str(path), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with new_browser() as b:
        page = b.open(out.as_uri())
        assert page.eval("document.querySelectorAll('#episodes tbody tr').length") == 4
        for payload in PAYLOADS:
            key = json.dumps(payload)
            page.goto(out.as_uri() + "#run=0&episode=" + page.eval(f"encodeURIComponent({key})"))
            page.wait("document.getElementById('calls')")
            shown = page.eval("document.getElementById('main').textContent")
            assert shown.count(payload) >= 4  # title, system, user, answer, tool name...
        assert page.eval("window.__pwned") is None
        assert (
            page.eval(
                "document.querySelectorAll('#app img, #app svg:not(.chart svg) "
                "foreignObject, #app script').length"
            )
            == 0
        )
        assert page.errors == []


def test_written_page_is_private_and_says_where(tmp_path: Path) -> None:
    path = hostile_cassette(tmp_path / "run.jsonl")
    proc = cassette_cli("view", str(path), "-o", "page.html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "page.html" in proc.stdout
    assert stat.S_IMODE((tmp_path / "page.html").stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: d / "missing.jsonl", "no such file"),
        (
            lambda d: (
                (d / "bad.jsonl").write_text('{"type": "header"}\nnot json\n') and d / "bad.jsonl"
            ),
            "bad.jsonl",
        ),
    ],
    ids=["missing", "damaged"],
)
def test_bad_input_is_one_line(tmp_path: Path, make: object, says: str) -> None:
    target = make(tmp_path)  # type: ignore[operator]
    line = one_line_error(cassette_cli("view", str(target), "-o", "x.html", cwd=tmp_path))
    assert says in line.lower()
    assert not (tmp_path / "x.html").exists()


def test_served_page_answers_on_localhost_until_ctrl_c(
    tmp_path: Path, new_browser: Callable[..., Browser]
) -> None:
    path = hostile_cassette(tmp_path / "run.jsonl")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cassette", "view", str(path), "--no-browser", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), line
        url = line.split()[1]
        with new_browser() as b:
            page = b.open(url)
            assert page.eval("document.querySelectorAll('#episodes tbody tr').length") == 4
            assert {r.split("#")[0] for r in page.requests} == {url}
            assert page.errors == []
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def _one_call(path: Path, text: str) -> None:
    with cassette.open(path, "record") as cas:
        request = {"model": "m", "messages": [{"role": "user", "content": text}]}
        answer = {"choices": [{"message": {"role": "assistant", "content": f"re: {text}"}}]}
        cas.call(request, live=lambda: answer, env_index=0)


def _shown_runs(page: Path) -> list[str]:
    index = r'<script type="application/json" id="index">(.*?)</script>'
    found = re.search(index, page.read_text())
    assert found is not None  # (a small page: its index block is plain JSON)
    return [run["name"] for run in json.loads(found.group(1))["runs"]]


def test_a_folder_of_separate_runs_shows_each_and_one_runs_shards_show_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "runs"
    _one_call(folder / "a.jsonl", "first run")
    _one_call(folder / "b.jsonl", "second run")
    result = cassette_cli("view", str(folder), "-o", str(tmp_path / "runs.html"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "recorded twice" not in result.stderr  # not read as shards of one run
    assert _shown_runs(tmp_path / "runs.html") == [str(folder / "a.jsonl"), str(folder / "b.jsonl")]

    shards = tmp_path / "sharded"
    monkeypatch.setenv("CASSETTE_RUN", "rollout-7")
    for worker in ("w1", "w2"):
        monkeypatch.setenv("CASSETTE_SHARD", worker)
        with cassette.open(f"{shards}/", "record") as cas:
            request = {"model": "m", "messages": [{"role": "user", "content": worker}]}
            cas.call(request, live=lambda: {"choices": []}, env_index=worker)
    result = cassette_cli("view", str(shards), "-o", str(tmp_path / "one.html"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert _shown_runs(tmp_path / "one.html") == [str(shards)]
