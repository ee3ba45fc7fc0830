"""Unplayed recordings: the summary section and ``--cassette-fail-unused``."""

from __future__ import annotations

import pytest

from tests.helpers.plugin_project import TWO_CALLS, Project

ONE_CALL = """
def test_two_calls(cassette):
    note("test_two_calls", cassette.call({"q": "one"}, live=live("one")))
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    project = Project(pytester, monkeypatch)
    project.module("test_unused", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    project.module("test_unused", ONE_CALL)  # now the code makes only the first call
    return project


def test_unused_recordings_are_reported(project: Project) -> None:
    result = project.run()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*= cassette: unused recordings =*",
            "test_unused.py::test_two_calls: 1 of 2 recorded interactions never played "
            "(tests/cassettes/test_unused/test_two_calls.jsonl)",
            "1 recorded interaction in 1 test never played: re-record with "
            "--cassette-mode=record if the code no longer makes these calls; "
            "--cassette-fail-unused makes this fail the run",
        ]
    )


def test_verbose_lists_the_unused_keys(project: Project) -> None:
    result = project.run("-v")
    result.stdout.fnmatch_lines(
        [
            "test_unused.py::test_two_calls: 1 of 2 recorded interactions never played *",
            "    env_index=0 channel='llm' step=1",
        ]
    )


def test_fail_unused_sets_a_failing_exit_status(project: Project) -> None:
    result = project.run("--cassette-fail-unused")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*= cassette: unused recordings =*",
            "test_unused.py::test_two_calls: 1 of 2 *",
            "--cassette-fail-unused: 1 recorded interaction in 1 test never played; the run fails",
        ]
    )


def test_fail_unused_from_ini(project: Project) -> None:
    project.pytester.makeini("[pytest]\ncassette_fail_unused = true\n")
    assert project.run().ret == pytest.ExitCode.TESTS_FAILED


def test_fail_unused_in_append_mode_and_not_in_record_mode(project: Project) -> None:
    assert project.run("--cassette-mode=append", "--cassette-fail-unused").ret == 1
    result = project.run("--cassette-mode=record", "--cassette-fail-unused")
    assert result.ret == pytest.ExitCode.OK
    assert "unused recordings" not in result.stdout.str()
    # re-recorded with one call: nothing is unused any more
    result = project.run("--cassette-fail-unused")
    assert result.ret == pytest.ExitCode.OK
    assert "unused recordings" not in result.stdout.str()


def test_a_failing_test_is_not_also_reported_as_unused(project: Project) -> None:
    project.module("test_unused", ONE_CALL + "    assert False\n")
    result = project.run("--cassette-fail-unused")
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "unused recordings" not in result.stdout.str()


def test_no_unused_means_no_section(project: Project) -> None:
    project.module("test_unused", TWO_CALLS)
    result = project.run("--cassette-fail-unused")
    assert result.ret == pytest.ExitCode.OK
    assert "unused recordings" not in result.stdout.str()
