"""A ``cassette tau2`` replay that misses prints the command that re-records it, and that
command, run as printed against a live model, records a cassette that then replays.

Its own module (three tau2 processes, ~15 s of CPU), so that xdist's loadfile runs it beside
the other command-line error tests.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.helpers.cli import TAU2_MOCK, cassette_cli, needs_tau2, one_line_error


@needs_tau2
@pytest.mark.slow
def test_a_tau2_replay_that_misses_prints_the_command_that_re_records_it(tmp_path: Path) -> None:
    from fixtures.tau2_server import Tau2Server

    # the shipped cassette's header (one task of its settings) and no interaction
    header = json.loads(TAU2_MOCK.read_text().splitlines()[0])
    header["meta"]["tau2"]["task_ids"] = ["create_task_1"]
    (tmp_path / "mock.jsonl").write_text(json.dumps(header) + "\n")
    line = one_line_error(cassette_cli("tau2", "mock.jsonl", cwd=tmp_path))
    assert "CASSETTE_FORCE_MODE" not in line
    found = re.search(r"run `(cassette tau2 [^`]+)` against a live model", line)
    assert found, line
    argv = shlex.split(found[1])
    assert argv[2:4] == ["--mode", "record"] and argv[-1] == "mock.jsonl", argv

    # follow it, against a live model (here the scripted one, where litellm looks for it)
    with Tau2Server("random") as server:
        live = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-test"}
        recorded = cassette_cli(*argv[1:], cwd=tmp_path, env=live)
    assert recorded.returncode == 0, recorded.stderr[-3000:]
    assert "LLM calls made" in recorded.stdout
    replayed = cassette_cli("tau2", "mock.jsonl", cwd=tmp_path)  # the server is gone
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert "replayed from mock.jsonl, 0 live" in replayed.stdout
