"""Every ```python and ```console block of README.md and docs/**/*.md runs, page by page,
in one fresh directory against a scripted model server (the convention is in
tests/helpers/docblocks.py and on the contributing page)."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from tests.helpers.chat import MakeServer
from tests.helpers.docblocks import PageEnv, blocks, marker_problems, page_id, pages, run_block

PAGES = pages()
RUNNABLE = [page for page in PAGES if any(b.runs for b in blocks(page))]


def test_most_pages_have_runnable_examples() -> None:
    """The pages without one are prose, tables or generated reference, few of them."""
    assert "README.md" in map(page_id, RUNNABLE)
    assert len(RUNNABLE) >= len(PAGES) - 12, sorted(
        set(map(page_id, PAGES)) - set(map(page_id, RUNNABLE))
    )


@pytest.mark.parametrize("page", RUNNABLE, ids=[page_id(p) for p in RUNNABLE])
def test_the_pages_blocks_run_in_order(page: Path, make_server: MakeServer, tmp_path: Path) -> None:
    found = blocks(page)
    server = make_server("random")
    where = tmp_path / "page"
    where.mkdir()
    env = PageEnv.make(where, server.base_url, server.root_url)
    for n, block in enumerate(found):
        run_block(block, n, env)


def test_every_marker_says_why_and_sits_above_a_fence() -> None:
    problems = [problem for page in PAGES for problem in marker_problems(page)]
    assert not problems, "\n".join(problems)


def _undefined_names(source: str) -> set[str]:
    """Names a block reads that it never imports, assigns or binds (scopes ignored: a
    coarse check for a missing import). ``my_*`` names stand for the reader's own code."""
    tree = ast.parse(source)
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return {name for name in read - bound if not name.startswith("my_")}


def test_every_python_block_parses_and_imports_what_it_uses() -> None:
    """Not-run blocks included, unless marked: a reader copies them too."""
    problems = []
    for page in PAGES:
        for block in blocks(page):
            if block.lang != "python" or block.not_run is not None:
                continue
            try:
                missing = _undefined_names(block.text)
            except SyntaxError as exc:
                problems.append(f"{block.where}: does not parse: {exc}")
                continue
            if missing:
                problems.append(f"{block.where}: uses {sorted(missing)} without defining them")
    assert not problems, "\n".join(problems)
