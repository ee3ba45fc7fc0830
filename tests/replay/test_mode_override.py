"""The printed fix of a miss works when followed literally, where it is printed.

In a script the code's ``mode=`` wins over ``$CASSETTE_MODE``; the message names
``CASSETTE_FORCE_MODE=record`` (which wins over the code) and ``cassette run --mode record``.
Under pytest it names ``--cassette-mode=record``. Each test runs the failing thing, reads the
fix from what was printed, does exactly that, and checks that the re-run recorded and that
the unchanged command then replays.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import cassette
from cassette import CassetteModeError, Mode

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import os, sys
import cassette

calls = []

def model():
    calls.append(1)
    if os.environ.get("NO_MODEL"):
        raise SystemExit("the model was called")
    return {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}

with cassette.open(sys.argv[1], mode="replay") as cas:  # the code says replay
    answer = cas.call({"messages": [{"role": "user", "content": "hello"}]}, live=model)
print(cas.mode.value, len(calls), answer["choices"][0]["message"]["content"])
"""


def python(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CASSETTE_")}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env={**base, **(env or {})}
    )


# `cassette ...` as this checkout runs it (the console script on PATH may be another's)
CASSETTE = ("-c", "from cassette.cli import main; main(prog_name='cassette')")


def last_line(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stderr.strip().splitlines()[-1]


def test_a_script_that_misses_prints_a_fix_that_records_then_replays(tmp_path: Path) -> None:
    path, script = tmp_path / "agent.jsonl", tmp_path / "agent.py"
    script.write_text(SCRIPT)
    command = [str(script), str(path)]

    miss = python(*command)
    assert miss.returncode != 0
    message = last_line(miss)
    assert message.startswith("cassette.errors.CassetteMiss"), miss.stderr
    assert "--cassette-mode" not in message  # a pytest flag: no use in a script
    # $CASSETTE_MODE does not beat the code's mode=, as the message does not claim
    assert python(*command, env={"CASSETTE_MODE": "record"}).returncode != 0

    # follow it: the variable it names, set as it says, on the same command
    found = re.search(r"\b(CASSETTE_FORCE_MODE)=(\w+)", message)
    assert found, message
    recorded = python(*command, env={found[1]: found[2]})
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.split() == ["record", "1", "hi"]

    # then the unchanged command replays, with no model
    replayed = python(*command, env={"NO_MODEL": "1"})
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.split() == ["replay", "0", "hi"]


def test_the_cassette_run_form_of_the_fix_works_as_printed(tmp_path: Path) -> None:
    path, script = tmp_path / "agent.jsonl", tmp_path / "agent.py"
    script.write_text(SCRIPT)
    message = last_line(python(str(script), str(path)))
    found = re.search(r"`cassette run (--mode record) -- <your command>`", message)
    assert found, message

    # `cassette run --mode record -- python agent.py agent.jsonl`, no --cassette needed
    wrapped = [*found[1].split(), "--", sys.executable, str(script), str(path)]
    recorded = python(*CASSETTE, "run", *wrapped)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.split() == ["record", "1", "hi"]
    replayed = python(str(script), str(path), env={"NO_MODEL": "1"})
    assert replayed.stdout.split() == ["replay", "0", "hi"], replayed.stderr


def test_force_mode_wins_over_the_code_and_cassette_mode_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CASSETTE_FORCE_MODE", raising=False)
    monkeypatch.setenv("CASSETTE_MODE", "record")
    with cassette.open(tmp_path / "a.jsonl", "passthrough") as cas:
        assert cas.mode is Mode.PASSTHROUGH  # the code's mode
    with cassette.open(tmp_path / "a.jsonl") as cas:
        assert cas.mode is Mode.RECORD  # no mode in the code: $CASSETTE_MODE
    monkeypatch.setenv("CASSETTE_FORCE_MODE", "Passthrough")
    with cassette.open(tmp_path / "a.jsonl", "record") as cas:
        assert cas.mode is Mode.PASSTHROUGH
    monkeypatch.setenv("CASSETTE_FORCE_MODE", "")
    with cassette.open(tmp_path / "a.jsonl", "passthrough") as cas:
        assert cas.mode is Mode.PASSTHROUGH  # empty: not set
    monkeypatch.setenv("CASSETTE_FORCE_MODE", "recrod")
    with pytest.raises(CassetteModeError, match=r"^CASSETTE_FORCE_MODE='recrod': unknown"):
        cassette.open(tmp_path / "a.jsonl", "replay")


def test_a_forced_replay_that_misses_names_the_variable_to_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASSETTE_FORCE_MODE", "replay")
    with (
        cassette.open(tmp_path / "a.jsonl", "record") as cas,
        pytest.raises(
            cassette.CassetteMiss, match=r"CASSETTE_FORCE_MODE=record \(it is replay now;"
        ),
    ):
        cas.call({"messages": []}, live=dict)


TEST_MODULE = """
def test_agent(cassette):
    answer = cassette.call({"messages": [{"role": "user", "content": "hi"}]},
                           live=lambda: {"content": "hello"})
    assert answer == {"content": "hello"}
"""


def test_under_pytest_the_printed_flag_records_then_the_test_replays(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CASSETTE_MODE", "CASSETTE_FORCE_MODE"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_agent=TEST_MODULE)
    options = ("-p", "no:cacheprovider", "-p", "no:randomly")
    miss = pytester.runpytest_inprocess(*options)
    miss.assert_outcomes(failed=1)
    out = miss.stdout.str()
    assert "CASSETTE_FORCE_MODE" not in out  # under pytest, the flag
    assert re.search(r"CassetteMiss: .*re-record with --cassette-mode=record", out), out
    again = re.search(r"re-record this test with: (.+)", out)
    assert again, out
    argv = shlex.split(again[1])
    assert argv[:2] == ["pytest", "--cassette-mode=record"]
    pytester.runpytest_inprocess(*options, *argv[1:]).assert_outcomes(passed=1)
    pytester.runpytest_inprocess(*options).assert_outcomes(passed=1)  # replays


def test_a_bad_cassette_mode_variable_is_named_in_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script that passes no mode= and gets 'unknown mode' must learn where it came from."""
    monkeypatch.delenv("CASSETTE_FORCE_MODE", raising=False)
    monkeypatch.setenv("CASSETTE_MODE", "replya")
    with pytest.raises(CassetteModeError, match=r"^CASSETTE_MODE='replya': unknown cassette mode"):
        cassette.open(tmp_path / "a.jsonl")
    with pytest.raises(CassetteModeError, match=r"^unknown cassette mode 'bogus'"):
        cassette.open(tmp_path / "a.jsonl", mode="bogus")  # the code's own mode: no variable


def test_a_miss_under_cassette_run_replay_prints_a_fix_that_works_there(tmp_path: Path) -> None:
    """Under `cassette run --mode replay` the variable is set by cassette run itself, so
    setting it outside changes nothing: the printed fix must also name --mode record."""
    script = tmp_path / "agent.py"
    script.write_text(
        "import cassette\n"
        "with cassette.open('a.jsonl', 'replay') as cas:\n"
        "    cas.call({'messages': []}, live=lambda: {'choices': []})\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASSETTE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    cli = [sys.executable, "-c", "from cassette.cli import main; main(prog_name='cassette')"]

    def run(mode: str) -> subprocess.CompletedProcess[str]:
        command = [*cli, "run", "--mode", mode, "--", sys.executable, str(script)]
        return subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )

    missed = run("replay")
    assert missed.returncode != 0 and "under `cassette run --mode`, with --mode record" in (
        missed.stderr
    )
    assert run("record").returncode == 0  # the fix, as printed
    assert run("replay").returncode == 0, run("replay").stderr
