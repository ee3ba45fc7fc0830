"""``--cassette-mode``: the choices, the error for others, and the precedence rules."""

from __future__ import annotations

import pytest

import cassette
from cassette.testing import plugin
from tests.helpers.plugin_project import TWO_CALLS, Project


def test_choices_are_the_modes_and_listed_in_help(project: Project) -> None:
    assert tuple(m.value for m in cassette.Mode) == plugin.MODES
    result = project.run("--help")
    result.stdout.fnmatch_lines(
        [
            "*--cassette-mode={replay,record,auto,append,passthrough}",
            "*Precedence: this option > $CASSETTE_MODE >*",
            "*--cassette-dir=DIR*",
            "*--cassette-fail-unused*",
            "*cassette_mode (string):*",
            "*cassette_dir (string):*",
        ]
    )


def test_an_invalid_choice_is_a_usage_error(project: Project) -> None:
    result = project.run("--cassette-mode=rewind")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--cassette-mode: invalid choice: 'rewind' (choose from *)"])


@pytest.mark.parametrize(
    ("mode", "outcome", "second_live", "written"),
    [
        ("record", "passed", ["one", "two", "three"], True),  # all live, rewritten
        ("replay", "failed", [], False),  # step 2 is a miss
        ("auto", "failed", [], False),  # the file exists, so it replays: a miss
        ("append", "passed", ["three"], True),  # serves steps 0-1, records step 2
        ("passthrough", "passed", ["one", "two", "three"], False),
    ],
)
def test_each_mode_on_an_existing_cassette(
    project: Project, mode: str, outcome: str, second_live: list[str], written: bool
) -> None:
    project.module("test_modes", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    path = project.cassette("test_modes", "test_two_calls")
    before = path.read_bytes()
    project.module(
        "test_modes", TWO_CALLS + '    cassette.call({"q": "three"}, live=live("three"))\n'
    )
    project.run(f"--cassette-mode={mode}").assert_outcomes(**{outcome: 1})
    assert project.live_calls()[2:] == second_live
    assert (path.read_bytes() != before) is written
    if written:
        requests = [i["request"]["q"] for i in project.interactions(path)]
        assert requests == ["one", "two", "three"]


def test_auto_and_passthrough_without_a_cassette(project: Project) -> None:
    project.module("test_fresh", TWO_CALLS)
    project.run("--cassette-mode=passthrough").assert_outcomes(passed=1)
    assert not project.cassettes.exists()
    project.run("--cassette-mode=auto").assert_outcomes(passed=1)
    assert project.cassette("test_fresh", "test_two_calls").is_file()
    assert project.live_calls() == ["one", "two"] * 2


def test_environment_variable_below_the_option(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.module("test_env", TWO_CALLS)
    monkeypatch.setenv("CASSETTE_MODE", "record")
    result = project.run()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["cassette: mode=record (from $CASSETTE_MODE), dir=tests/cassettes"]
    )
    assert project.live_calls() == ["one", "two"]

    result = project.run("--cassette-mode=replay")
    result.assert_outcomes(passed=1)
    assert project.live_calls() == ["one", "two"]  # the option won: replayed

    monkeypatch.setenv("CASSETTE_MODE", "rewind")
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*$CASSETTE_MODE: unknown cassette mode 'rewind'; use one of *"])


def test_environment_variable_above_the_marker(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.module(
        "test_marked",
        """
        @pytest.mark.cassette(mode="passthrough")
        def test_marked(cassette):
            assert cassette.mode.value == "append"
        """,
    )
    monkeypatch.setenv("CASSETTE_MODE", "append")
    project.run().assert_outcomes(passed=1)


def test_ini_mode_below_the_marker(project: Project) -> None:
    project.pytester.makeini("[pytest]\ncassette_mode = auto\nfilterwarnings = error\n")
    project.module(
        "test_ini",
        """
        def test_plain(cassette):
            assert cassette.requested_mode.value == "auto"

        @pytest.mark.cassette(mode="passthrough")
        def test_marked(cassette):
            assert cassette.mode.value == "passthrough"
        """,
    )
    result = project.run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["cassette: mode=auto (from ini), dir=tests/cassettes"])
    project.pytester.makeini("[pytest]\ncassette_mode = sometimes\n")
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini cassette_mode: unknown cassette mode 'sometimes'*"])


def test_default_is_replay_and_quiet(project: Project) -> None:
    project.module(
        "test_default",
        "def test_default(cassette):\n    assert cassette.mode.value == 'replay'\n",
    )
    result = project.run()
    result.assert_outcomes(passed=1)
    assert "cassette: mode=" not in result.stdout.str()
    result = project.run("-v")
    result.stdout.fnmatch_lines(["cassette: mode=replay (from default), dir=tests/cassettes"])
