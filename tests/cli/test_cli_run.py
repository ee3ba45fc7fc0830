"""`cassette run`: a command with its cassettes' mode (CASSETTE_FORCE_MODE, CASSETTE_MODE)
and CASSETTE_PATH set, its exit code ours."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cassette.cli import main

AGENT = """
import os, sys
import cassette

with cassette.open(os.environ["CASSETTE_PATH"]) as cas:  # mode from $CASSETTE_MODE
    def model():
        if os.environ.get("NO_MODEL"):
            raise SystemExit("the model was called")
        return {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}
    answer = cas.call({"messages": [{"role": "user", "content": "hello"}]}, live=model)
    print(cas.mode.value, answer["choices"][0]["message"]["content"], file=sys.stderr)
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", *args])


@pytest.fixture(autouse=True)
def _in_a_fresh_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative cassette paths land in the test's own directory, never in the checkout."""
    monkeypatch.chdir(tmp_path)


def test_the_command_sees_the_variables_and_its_exit_code_is_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = tmp_path / "seen.txt"
    probe = (
        "import os, sys; open(sys.argv[1], 'w').write("
        "os.environ['CASSETTE_MODE'] + ' ' + os.environ['CASSETTE_PATH']); sys.exit(3)"
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "a.jsonl").touch()  # replay refuses a cassette that is not there
    argv = ["--", sys.executable, "-c", probe, str(seen)]
    result = run("--mode", "REPLAY", "--cassette", "runs/a.jsonl", *argv)
    assert result.exit_code == 3
    assert seen.read_text() == f"replay {tmp_path / 'runs' / 'a.jsonl'}"


def test_record_then_replay_through_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.jsonl"
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    record = run("--mode", "record", "--cassette", str(path), "--", sys.executable, str(script))
    assert record.exit_code == 0, record.output
    assert path.exists()
    monkeypatch.setenv("NO_MODEL", "1")
    replay = run("--mode", "replay", "--cassette", str(path), sys.executable, str(script))
    assert replay.exit_code == 0, replay.output
    # the default mode is auto: the cassette exists, so it replays
    assert run("--cassette", str(path), "--", sys.executable, str(script)).exit_code == 0


def test_options_after_the_command_belong_to_the_command(tmp_path: Path) -> None:
    code = "import sys; sys.exit(len(sys.argv))"
    result = run("--cassette", "x.jsonl", sys.executable, "-c", code, "--mode", "-q")
    assert result.exit_code == 3  # argv: -c, --mode, -q


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_command_killed_by_a_signal_exits_128_plus_it() -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    result = run("--cassette", "x.jsonl", "--", sys.executable, "-c", code)
    assert result.exit_code == 128 + signal.SIGTERM


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--cassette", "x.jsonl", "--", "no-such-command-here"], 127, "command not found"),
        (["--cassette", "x.jsonl"], 2, "Missing argument '-- CMD ...'"),
        (["--mode", "rewind", "--cassette", "x", "--", "true"], 2, "Invalid value for '--mode'"),
        (["--mdoe", "record", "--", "true"], 2, "No such option '--mdoe'. Did you mean '--mode'?"),
    ],
)
def test_errors_are_one_line(args: list[str], code: int, says: str) -> None:
    result = run(*args)
    assert result.exit_code == code
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert says in result.stderr


def test_mode_is_forced_and_the_path_optional(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    probe = (
        "import os, sys; e = os.environ; open(sys.argv[1], 'w').write(repr(("
        "e.get('CASSETTE_FORCE_MODE'), e.get('CASSETTE_MODE'), e.get('CASSETTE_PATH'))))"
    )
    assert run("--mode", "Record", "--", sys.executable, "-c", probe, str(seen)).exit_code == 0
    assert seen.read_text() == repr(("record", "record", None))
    # no --mode: CASSETTE_MODE=auto, which the code's mode= overrides; nothing forced
    assert run("--", sys.executable, "-c", probe, str(seen)).exit_code == 0
    assert seen.read_text() == repr((None, "auto", None))


def test_a_replay_of_a_missing_cassette_is_one_line_and_its_fix_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    command = ["--", sys.executable, str(script)]
    missing = run("--mode", "replay", "--cassette", "runs/typo.jsonl", *command)
    assert missing.exit_code == 2 and missing.stderr.count("\n") == 1
    assert missing.stderr.startswith("error: no cassette at runs/typo.jsonl to replay;")
    fix = missing.stderr.split("record it first: ", 1)[1].split()
    assert fix[:7] == ["cassette", "run", "--mode", "record", "--cassette", "runs/typo.jsonl", "--"]
    assert run(*fix[2:]).exit_code == 0  # the fix as printed records it
    monkeypatch.setenv("NO_MODEL", "1")
    assert run("--mode", "replay", "--cassette", "runs/typo.jsonl", *command).exit_code == 0


def test_a_url_is_passed_on_as_it_is(tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    probe = "import os, sys; open(sys.argv[1], 'w').write(os.environ['CASSETTE_PATH'])"
    for url in ("s3://bucket/runs/2026-12-01/", "memory://runs/a.jsonl"):
        argv = ["--no-auto", "--cassette", url, "--", sys.executable, "-c", probe, str(seen)]
        assert run(*argv).exit_code == 0
        assert seen.read_text() == url  # not made a local path under the working directory
    local = tmp_path / "a.jsonl"
    argv = ["--cassette", f"file://{local}", "--", sys.executable, "-c", probe, str(seen)]
    assert run(*argv).exit_code == 0
    assert seen.read_text() == str(local)


PROBE = "print('the command ran')"


def test_a_replay_of_a_file_that_is_not_a_cassette_is_one_line(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello world\n")
    result = run("--mode", "replay", "--cassette", str(notes), "--", sys.executable, "-c", PROBE)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {notes}:1: not valid JSON")
    assert result.stderr.count("\n") == 1 and "the command ran" not in result.output


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("mode", ["record", "append", "auto"])
def test_recording_into_a_read_only_directory_is_one_line(mode: str) -> None:
    """/proc/self is read-only to every user, root too (a chmod 0555 directory is not)."""
    where = "/proc/self/runs/eval.jsonl"
    result = run("--mode", mode, "--cassette", where, "--", sys.executable, "-c", PROBE)
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: cannot record {where}: /proc/self is not writable; record into a directory "
        "you can write to, or change its rights\n"
    )
    assert "the command ran" not in result.output


def test_a_read_only_cassette_may_be_re_recorded_but_not_appended_to(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes to read-only files")
    path = tmp_path / "a.jsonl"
    path.write_text("")
    path.chmod(0o444)
    command = ["--", sys.executable, "-c", PROBE]
    assert run("--mode", "record", "--cassette", str(path), *command).exit_code == 0
    result = run("--mode", "append", "--cassette", str(path), *command)
    assert result.exit_code == 2 and "the file is read-only" in result.stderr


def test_zero_code_recording_without_mode_checks_as_auto(tmp_path: Path) -> None:
    """No --mode: a zero-code recorder opens with CASSETTE_MODE=auto, so a missing cassette
    is recorded (its directory must be writable) and an existing one replayed (it must be
    a cassette); --no-auto leaves the mode to the command's own code."""
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc")
    command = ["--", sys.executable, "-c", PROBE]
    result = run("--cassette", "/proc/self/runs/a.jsonl", *command)
    assert result.exit_code == 2 and "/proc/self is not writable" in result.stderr
    notes = tmp_path / "notes.txt"
    notes.write_text("hello world\n")
    result = run("--cassette", str(notes), *command)
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {notes}:1: not valid JSON")
    assert "the command ran" not in result.output
    assert run("--no-auto", "--cassette", "/proc/self/runs/a.jsonl", *command).exit_code == 0
