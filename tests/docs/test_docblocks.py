"""The block runner itself: what it runs, what it leaves out, and that a failing block
fails it (a page of this test's own, in a temporary directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.chat import MakeServer
from tests.helpers.docblocks import (
    REPO,
    PageEnv,
    blocks,
    console_commands,
    marker_problems,
    run_block,
)

PAGE = """\
# A page

```python
print("runs")
```

<!-- not-run: needs a real provider -->
```python
raise SystemExit(3)
```

```python title="agent.py"
from openai import OpenAI
ANSWER = 42
```

<!-- exits: 2 -->
```console
$ python -c "import agent; print(agent.ANSWER)"
42
$ cassette --version
$ ls no-such-file
```

```text
$ not a command
```
"""


def _page(tmp_path: Path, text: str) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir(exist_ok=True)
    page = docs / "page.md"
    page.write_text(text)
    return page


def _run_all(page: Path, tmp_path: Path, make_server: MakeServer) -> None:
    server = make_server("random")
    where = tmp_path / "work"
    where.mkdir(exist_ok=True)
    env = PageEnv.make(where, server.base_url, server.root_url)
    for n, block in enumerate(blocks(page, page.parents[1])):
        run_block(block, n, env)


@pytest.fixture
def repo_page(tmp_path: Path) -> Path:
    """The page above, in a checkout-like root of its own."""
    return _page(tmp_path, PAGE)


def test_blocks_are_read_with_their_markers(repo_page: Path, tmp_path: Path) -> None:
    found = blocks(repo_page, tmp_path)
    assert [b.lang for b in found] == ["python", "python", "python", "console", "text"]
    assert [b.runs for b in found] == [True, False, False, True, False]
    assert found[1].not_run == "needs a real provider"
    assert found[2].title == "agent.py"
    assert found[3].exits == 2 and found[3].where == "docs/page.md:18"
    assert marker_problems(repo_page, tmp_path) == []


def test_a_page_runs_in_order_and_an_expected_exit_passes(
    repo_page: Path, tmp_path: Path, make_server: MakeServer
) -> None:
    _run_all(repo_page, tmp_path, make_server)
    assert (tmp_path / "work" / "agent.py").read_text().startswith("from openai import")


def test_a_failing_block_fails_and_names_its_line(tmp_path: Path, make_server: MakeServer) -> None:
    page = _page(tmp_path, "x\n\n```console\n$ true\n$ cassette show missing.jsonl\n```\n")
    with pytest.raises(AssertionError, match=r"docs/page.md:3: `cassette show missing.jsonl`"):
        _run_all(page, tmp_path, make_server)


def test_the_blocks_reach_the_scripted_server_and_this_checkout(
    tmp_path: Path, make_server: MakeServer
) -> None:
    script = (
        "```python\nimport cassette, openai\n"
        f"assert cassette.__file__.startswith({str(REPO)!r}), cassette.__file__\n"
        "print(openai.OpenAI().chat.completions.create(model='m', messages=[{'role': "
        "'user', 'content': 'hi'}]).choices[0].message.content)\n```\n"
    )
    server = make_server("random")
    where = tmp_path / "work"
    where.mkdir()
    env = PageEnv.make(where, server.base_url, server.root_url)
    for n, block in enumerate(blocks(_page(tmp_path, script), tmp_path)):
        run_block(block, n, env)
    assert server.request_count == 1


@pytest.mark.parametrize(
    ("marker", "problem"),
    [
        ("<!-- not-run -->", "must say why"),
        ("<!-- not-run: -->", "must say why"),
        ("<!-- exits: two -->", "needs a number"),
    ],
)
def test_a_marker_without_its_argument_is_a_problem(
    tmp_path: Path, marker: str, problem: str
) -> None:
    page = _page(tmp_path, f"{marker}\n```console\n$ true\n```\n")
    (found,) = marker_problems(page, tmp_path)
    assert problem in found


def test_a_marker_away_from_a_fence_is_a_problem(tmp_path: Path) -> None:
    page = _page(tmp_path, "<!-- not-run: fragment -->\n\n```python\nx = 1\n```\n")
    assert marker_problems(page, tmp_path) == [
        "docs/page.md:1: a marker must sit right above a fence"
    ]


def test_console_commands_join_continued_lines() -> None:
    text = "$ cassette run --mode record \\\n    -- python eval.py\nshown output\n$ ls\n"
    assert console_commands(text) == ["cassette run --mode record \\\n    -- python eval.py", "ls"]
