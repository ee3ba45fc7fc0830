"""The README's runnable examples run as written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.readme import REPO, python_blocks, run_block


def test_the_record_replay_example_runs_and_shows_a_mismatch(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks() if "def run(mode)" in b]
    out = run_block(block, tmp_path)
    assert "request differs from the recording" in out
    assert "env_index=0 channel='llm' step=0" in out
    assert "first difference at messages[0].content" in out
    assert (tmp_path / "runs" / "a.jsonl").exists()


def test_the_thread_example_runs(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks() if "cassette.ContextExecutor(4)" in b]
    run_block(block, tmp_path)


@pytest.mark.slow
def test_the_mcp_agent_example_records_and_replays_with_nothing_running(tmp_path: Path) -> None:
    (block,) = [b for b in python_blocks() if "mcp_session(cas, mcp_server)" in b]
    out = run_block(block, tmp_path, timeout=120)
    assert out.strip(), "the example prints the first episode's answer"
    assert (tmp_path / "runs" / "mcp.jsonl").exists()


def _undefined_names(block: str) -> set[str]:
    """Names a block reads that it never imports, assigns or binds (scopes ignored: a
    coarse check for a missing import). ``my_*`` names are the reader's own code."""
    import ast
    import builtins

    tree = ast.parse(block)
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


def test_every_python_example_imports_what_it_uses() -> None:
    blocks = python_blocks()
    assert any("wrap_policy(my_policy, cas)" in b for b in blocks)
    assert any("patch_tau2(cas)" in b for b in blocks)
    for block in blocks:
        assert not _undefined_names(block), (sorted(_undefined_names(block)), block[:200])


def test_the_marker_path_is_documented_as_relative_to_the_cassette_dir() -> None:
    text = (REPO / "README.md").read_text()
    assert '@pytest.mark.cassette(path="shared/agent.jsonl"' in text
    assert "`tests/cassettes/shared/agent.jsonl`" in text
