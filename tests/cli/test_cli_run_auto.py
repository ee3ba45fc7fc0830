"""`cassette run --cassette PATH -- python script.py`: a script that never imports cassette
records its openai / anthropic / litellm calls and replays them with the scripted servers
stopped and the network cut off."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

import cassette
from cassette.storage.index import load_index
from tests.helpers.autorecord import NOWHERE, SCRIPTS, cassette_run
from tests.helpers.chat import MakeServer


def record_then_replay(path: Path, script: str, url: str, replay_url: str) -> tuple[str, str]:
    command = ["--", sys.executable, str(SCRIPTS / script)]
    recorded = cassette_run("--mode", "record", "--cassette", str(path), *command, url)
    assert recorded.returncode == 0, recorded.stderr
    (said,) = recorded.stderr.splitlines()  # one line: what was recorded, and where
    assert said.startswith("cassette run: recorded ") and said.endswith(f" to {path}")
    replayed = cassette_run("--mode", "replay", "--cassette", str(path), *command, replay_url)
    assert replayed.returncode == 0, replayed.stderr
    return recorded.stdout, replayed.stdout


def test_unmodified_openai_script_records_and_replays_offline(
    make_server: MakeServer, tmp_path: Path
) -> None:
    server = make_server("random")  # every answer differs: a wrong episode would show
    path = tmp_path / "runs" / "a.jsonl"
    command = ["--", sys.executable, str(SCRIPTS / "openai_eval.py")]
    recorded = cassette_run("--mode", "record", "--cassette", str(path), *command, server.base_url)
    assert recorded.returncode == 0, recorded.stderr
    assert server.request_count == 8 * 3 + 4
    server.stop()
    got = json.loads(recorded.stdout)
    assert len({turn for conv in got["async"] for turn in conv}) == 24
    steps = Counter(key[0] for key in load_index([path]).entries)
    assert sorted(steps.values()) == [1] * 4 + [3] * 8  # one episode per conversation
    # the two pairs of conversations with the same start: occurrences .0 and .1
    assert sum(name.endswith(".1") for name in steps) == 2
    assert "sk-not-a-real-key" not in path.read_text()
    for _ in range(2):
        replayed = cassette_run("--mode", "replay", "--cassette", str(path), *command, NOWHERE)
        assert replayed.returncode == 0, replayed.stderr
        assert replayed.stdout == recorded.stdout


def test_unmodified_anthropic_script_records_and_replays_offline(
    make_server: MakeServer, tmp_path: Path
) -> None:
    pytest.importorskip("anthropic")
    server = make_server("random")
    path = tmp_path / "b.jsonl"
    recorded, replayed = record_then_replay(path, "anthropic_eval.py", server.root_url, NOWHERE)
    assert replayed == recorded
    answers = json.loads(recorded)
    assert [a[1].startswith('The tool returned: "') for a in answers] == [True] * 4
    steps = Counter(key[0] for key in load_index([path]).entries)
    assert sorted(steps.values()) == [2] * 4


def test_replay_cuts_the_network_off_and_a_miss_fails_the_command(
    make_server: MakeServer, tmp_path: Path
) -> None:
    server = make_server("random")
    path = tmp_path / "c.jsonl"
    with cassette.open(path, "record"):  # a cassette with no calls (replay needs one)
        pass
    probe = f"import socket; socket.create_connection(('127.0.0.1', {server.port}))"
    result = cassette_run(
        "--mode", "replay", "--cassette", str(path), "--", sys.executable, "-c", probe
    )
    assert result.returncode == 1
    assert "the network is cut off" in result.stderr
    allowed = cassette_run(
        "--mode", "replay", "--allow-network", "--cassette", str(path), "--", sys.executable,
        "-c", probe,
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stderr
    # a call the recording never saw: the cassette's miss in one line, and a non-zero exit
    script = ["--", sys.executable, str(SCRIPTS / "openai_eval.py"), NOWHERE]
    missed = cassette_run("--mode", "replay", "--cassette", str(path), *script)
    assert missed.returncode == 1 and "Traceback" not in missed.stderr
    assert missed.stderr.startswith("error: no recording for env_index=")


def test_cassette_episode_names_the_episode(make_server: MakeServer, tmp_path: Path) -> None:
    server = make_server("random")
    path = tmp_path / "d.jsonl"
    code = (
        "import sys; from openai import OpenAI; c = OpenAI(base_url=sys.argv[1], api_key='k');"
        "[c.chat.completions.create(model='m', messages=[{'role': 'user', 'content': t}])"
        " for t in ('a', 'b')]"
    )
    args = ["--mode", "record", "--cassette", str(path), "--", sys.executable, "-c", code]
    result = cassette_run(*args, server.base_url, env={"CASSETTE_EPISODE": "7"})
    assert result.returncode == 0, result.stderr
    assert sorted(load_index([path]).entries) == [(7, "llm", 0), (7, "llm", 1)]


def test_no_auto_only_sets_the_environment(tmp_path: Path) -> None:
    probe = "import os, sys; print(os.environ.get('CASSETTE_AUTO'), 'cassette.autorecord' in "
    probe += "sys.modules)"
    path = str(tmp_path / "f.jsonl")
    auto = cassette_run("--cassette", path, "--", sys.executable, "-c", probe)
    assert auto.stdout.split() == ["1", "True"]
    plain = cassette_run("--no-auto", "--cassette", path, "--", sys.executable, "-c", probe)
    assert plain.stdout.split() == ["None", "False"]
