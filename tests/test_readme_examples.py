"""The README's examples for wrap_anthropic, `cassette run` zero-code recording and fork
run as written (issue 14)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MakeServer
from tests.test_readme import REPO, _python_blocks, _run_block


def _block(marker: str) -> str:
    (block,) = [b for b in _python_blocks() if marker in b]
    return block


def test_the_anthropic_example_records_and_replays(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    out = _run_block(_block("wrap_anthropic(client, cas)"), tmp_path)
    assert "The tool returned" not in out and out.startswith("({'word': ")
    assert (tmp_path / "runs" / "claude.jsonl").exists()


def test_the_fork_example_forks(tmp_path: Path) -> None:
    out = _run_block(_block("from cassette.replay.fork import fork_points"), tmp_path)
    assert "'why': 'mismatch'" in out and "'why': 'fork_at'" in out


def test_the_zero_code_example_records_then_replays_offline(
    make_server: MakeServer, tmp_path: Path
) -> None:
    (tmp_path / "eval.py").write_text(_block("# eval.py: reads OPENAI_BASE_URL"))
    (commands,) = re.findall(
        r"```bash\n(cassette run --mode record.*?)```", (REPO / "README.md").read_text(), re.S
    )
    lines = [line.split("#")[0].split() for line in commands.strip().splitlines()]
    assert [line[:3] for line in lines] == [["cassette", "run", "--mode"]] * 2
    server = make_server("random")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASSETTE_")}
    env.update(PYTHONPATH=str(REPO), OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-any")
    main = "import sys; from cassette.cli import main; sys.exit(main())"
    outputs = []
    for line in lines:
        argv = [sys.executable, "-c", main, *line[1:]]
        argv = [sys.executable if a == "python" else a for a in argv]
        proc = subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        outputs.append(proc.stdout)
        server.stop()  # the replay runs with no server
    assert outputs[0] == outputs[1]
    assert len(re.findall(r"Answer [0-9a-f]{8}:", outputs[0])) == 8  # 8 conversations
