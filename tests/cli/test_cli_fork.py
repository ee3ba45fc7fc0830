"""`cassette fork BASE NEW -- CMD`: an unmodified script forked from a recorded run; the
matching prefix replays, the rest goes live, NEW replays alone."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.replay.fork import fork_points
from tests.helpers.autorecord import NOWHERE, SCRIPTS, cassette_run
from tests.helpers.chat import MakeServer


def test_fork_an_unmodified_script(make_server: MakeServer, tmp_path: Path) -> None:
    base, new = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    script = ["--", sys.executable, str(SCRIPTS / "two_chats.py")]
    first = make_server("random")
    recorded = cassette_run(
        "--mode", "record", "--cassette", str(base), *script, first.base_url, "more"
    )
    assert recorded.returncode == 0, recorded.stderr
    first.stop()
    other = make_server("random")
    forked = cassette_run(
        "--fork-cli", str(base), str(new), *script, other.base_url, "something else"
    )
    assert forked.returncode == 0, forked.stderr
    before, after = json.loads(recorded.stdout), json.loads(forked.stdout)
    # conversation 0 replays whole, conversation 1 from its second request on is live
    assert after[:4] == before[:4] and after[4] != before[4] and after[5] != before[5]
    assert other.request_count == 2
    points = fork_points(new)
    assert [(p["step"], p["why"], p["base"]) for p in points.values()] == [
        (1, "mismatch", str(base))
    ]
    # --at forks a named episode even where it matches
    env = next(iter(points))
    named = tmp_path / "c.jsonl"
    at = cassette_run(
        "--fork-cli", str(base), str(named), "--at", f"{env}=0", *script, other.base_url, "more"
    )
    assert at.returncode == 0, at.stderr
    assert [p["why"] for p in fork_points(named).values()] == ["fork_at"]
    assert other.request_count == 2 + 3
    # the fork replays alone, offline
    other.stop()
    replayed = cassette_run(
        "--mode", "replay", "--cassette", str(new), *script, NOWHERE + "/v1", "something else"
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == forked.stdout


def test_a_url_for_new_is_passed_on_as_it_is(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from cassette.cli import main

    base = tmp_path / "base.jsonl"
    base.write_text("")
    seen = tmp_path / "seen.txt"
    probe = "import os, sys; open(sys.argv[1], 'w').write(os.environ['CASSETTE_PATH'])"
    url = "s3://bucket/runs/forked/"
    args = ["fork", str(base), url, "--no-auto", "--", sys.executable, "-c", probe, str(seen)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert seen.read_text() == url  # not made a local path under the working directory


PROBE = "print('the command ran')"


def test_a_fork_of_a_base_that_is_not_a_cassette_is_one_line(tmp_path: Path) -> None:
    base = tmp_path / "base.jsonl"
    base.write_text("[1, 2]\n")
    argv = ["fork", str(base), str(tmp_path / "new.jsonl"), "--", sys.executable, "-c", PROBE]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {base}:1: expected a JSON object, got list")
    assert result.stderr.count("\n") == 1 and "the command ran" not in result.output


def test_a_fork_into_a_read_only_directory_is_one_line(tmp_path: Path) -> None:
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc")
    base = tmp_path / "base.jsonl"
    with cassette.open(base, "record") as cas:
        cas.call({"messages": [{"role": "user", "content": "hi"}]}, live=lambda: {"ok": 1})
    argv = ["fork", str(base), "/proc/self/new.jsonl", "--", sys.executable, "-c", PROBE]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: cannot record /proc/self/new.jsonl: /proc/self is")
    assert "the command ran" not in result.output


def test_at_an_episode_or_channel_the_base_lacks_is_one_line(tmp_path: Path) -> None:
    """--at 0=1 on a base whose episodes are named otherwise (zero-code recording names
    them by hash) would fork nothing, silently."""
    base = tmp_path / "base.jsonl"
    with cassette.open(base, "record") as cas, cassette.episode("5466e2bc9a.0"):
        cas.call({"messages": [{"role": "user", "content": "hi"}]}, live=lambda: {"ok": 1})
    new = str(tmp_path / "new.jsonl")
    command = ["--", sys.executable, "-c", PROBE]
    result = CliRunner().invoke(main, ["fork", str(base), new, "--at", "0=1", *command])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: --at 0=1: {base} has no episode 0 on channel llm (it holds 5466e2bc9a.0); "
        f"name one of those, as `cassette show {base}` lists them\n"
    )
    argv = ["fork", str(base), new, "--at", "0=1", "--channel", "agent", *command]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: --channel agent: {base} holds no call on channel")
    assert "the command ran" not in result.output
    argv = ["fork", str(base), new, "--at", "5466e2bc9a.0=1", *command]  # the fix, followed
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output


def test_a_url_or_missing_base_is_one_line_with_a_fix(tmp_path: Path) -> None:
    """Not click's "Path 's3://b/a.jsonl' does not exist": a URL base is not forked from
    (CASSETTE_FORK_FROM is a local path), and the fix names the copy to make."""
    new = str(tmp_path / "new.jsonl")
    argv = ["fork", "s3://bucket/a.jsonl", new, "--", sys.executable, "-c", PROBE]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "error: BASE s3://bucket/a.jsonl is a URL; fork from a local copy: cassette merge "
        f"base.jsonl s3://bucket/a.jsonl, then cassette fork base.jsonl "
        f"{shlex.join([new, '--', sys.executable, '-c', PROBE])}\n"
    )
    missing = str(tmp_path / "nope.jsonl")
    result = CliRunner().invoke(main, ["fork", missing, new, "--", sys.executable, "-c", PROBE])
    assert result.exit_code == 2
    assert result.stderr == f"error: no such file or directory: {missing}; check the path\n"
