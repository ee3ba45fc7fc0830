"""Colour, progress bars and one-line errors: what every command shares (cassette.cli.console)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cassette.cli
import cassette.cli.console
from cassette.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
RUN_A = str(GOLDEN / "run_a.jsonl")
ESC = "\x1b["


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), env=env)


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if stdout and stderr were terminals."""
    monkeypatch.setattr(cassette.cli.console, "_isatty", lambda stream: True)


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if every input were large enough for a progress bar."""
    monkeypatch.setattr(cassette.cli.console, "LARGE_BYTES", 0)


def test_piped_output_has_no_colour_unless_asked() -> None:
    assert ESC not in cli("show", RUN_A).stdout
    assert ESC not in cli("--no-color", "show", RUN_A).stdout
    coloured = cli("--color", "show", RUN_A, "--env", "0")
    assert coloured.exit_code == 0
    assert f"{ESC}1mepisode 0{ESC}0m" in coloured.stdout
    assert f"{ESC}36m      user  {ESC}0mWhat is 17 * 23?" in coloured.stdout


@pytest.mark.usefixtures("terminal")
def test_a_terminal_gets_colour_unless_no_color_is_set() -> None:
    assert ESC in cli("stats", RUN_A).stdout
    assert ESC not in cli("stats", RUN_A, env={"NO_COLOR": "1"}).stdout
    assert ESC in cli("--color", "stats", RUN_A, env={"NO_COLOR": "1"}).stdout  # asked for
    assert ESC not in cli("--no-color", "stats", RUN_A).stdout


@pytest.mark.usefixtures("terminal")
def test_json_is_never_coloured() -> None:
    result = cli("--color", "stats", RUN_A, "--json")
    assert result.exit_code == 0 and ESC not in result.stdout
    assert json.loads(result.stdout)["episodes"] == 3


@pytest.mark.usefixtures("terminal", "large")
@pytest.mark.parametrize(
    ("args", "label"),
    [
        (["validate", RUN_A], "validating run_a.jsonl"),
        (["show", RUN_A], "reading run_a.jsonl"),
        (["stats", RUN_A, "--json"], "reading run_a.jsonl"),
        (["convert", "--from", "ep", str(GOLDEN / "ep_playback.jsonl"), "{out}"], "converting"),
        (["redact", RUN_A, "{out}"], "redacting run_a.jsonl"),
        (["merge", "{out}", str(GOLDEN / "shards")], "merging"),
    ],
)
def test_large_inputs_get_a_progress_bar_on_stderr_of_a_terminal(
    tmp_path: Path, args: list[str], label: str
) -> None:
    argv = [a.replace("{out}", str(tmp_path / "out.jsonl")) for a in args]
    result = cli("--no-color", *argv)
    assert result.exit_code == 0, result.output
    assert label in result.stderr
    assert label not in result.stdout and ESC not in result.stdout


@pytest.mark.usefixtures("large")
def test_piped_output_gets_no_progress_bar() -> None:
    result = cli("validate", RUN_A)
    assert result.exit_code == 0
    assert result.stderr == ""
    assert result.stdout.startswith(f"OK {RUN_A}: ") and result.stdout.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nosuch"], "error: No such command 'nosuch'; see `cassette --help`"),
        (["show", RUN_A, "--bogus"], "error: No such option '--bogus'; see `cassette show --help`"),
        (
            ["--colour", "show", RUN_A],
            "error: No such option '--colour'. (Did you mean one of: '--color'",
        ),
        (["stats"], "error: Missing argument 'PATH'; see `cassette stats --help`"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args: list[str], says: str) -> None:
    result = cli(*args)
    assert result.exit_code == 2
    assert result.stderr.startswith(says) and result.stderr.count("\n") == 1
    assert "Usage:" not in result.output


def test_bare_cassette_shows_help() -> None:
    result = cli()
    assert "Usage: cassette" in result.output
    for command in ("show", "stats", "validate", "convert", "redact", "merge", "run"):
        assert f"  {command} " in result.output


@pytest.mark.parametrize(
    "command", ["show", "stats", "validate", "convert", "redact", "merge", "run"]
)
def test_every_command_has_help_with_examples(command: str) -> None:
    result = cli(command, "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.stdout and f"cassette {command} " in result.stdout


def test_fail_collapses_a_multi_line_message(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cassette.cli.console.Console(color=False).fail("request differs\n  first difference at x\n")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "error: request differs; first difference at x\n"
