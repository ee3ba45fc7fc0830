"""Replay (the default) never calls live: a miss fails the test and says how to re-record."""

from __future__ import annotations

from tests.helpers.plugin_project import TWO_CALLS, Project


def test_miss_without_a_cassette_names_the_flag_and_the_path(project: Project) -> None:
    project.module("test_miss", TWO_CALLS)
    result = project.run()
    result.assert_outcomes(failed=1)
    assert project.live_calls() == []
    result.stdout.fnmatch_lines(
        [
            "E * cassette.errors.CassetteMiss: no recording for env_index=0 channel='llm' step=0;"
            " */tests/cassettes/test_miss/test_two_calls.jsonl does not exist.*"
            "re-record with --cassette-mode=record*",
            "*- cassette -*",
            "cassette tests/cassettes/test_miss/test_two_calls.jsonl (mode=replay, from default)",
            "re-record this test with: pytest --cassette-mode=record test_miss.py::test_two_calls",
            "FAILED test_miss.py::test_two_calls - *",
        ]
    )
    assert not project.cassettes.exists()  # replay writes nothing


def test_miss_after_the_recorded_steps(project: Project) -> None:
    project.module("test_more", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    project.module(
        "test_more",
        TWO_CALLS + '    cassette.call({"q": "three"}, live=live("three"))\n',
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    assert project.live_calls() == ["one", "two"]
    result.stdout.fnmatch_lines(
        [
            "E *CassetteMiss: no recording for env_index=0 channel='llm' step=2;"
            " */test_more/test_two_calls.jsonl: *re-record with --cassette-mode=record*",
            "re-record this test with: pytest --cassette-mode=record test_more.py::test_two_calls",
        ]
    )


def test_mismatch_gets_the_same_hint(project: Project) -> None:
    project.module("test_changed", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    project.module("test_changed", TWO_CALLS.replace('{"q": "two"}', '{"q": "2"}'))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *CassetteMismatch: request differs from the recording at *test_two_calls.jsonl:3",
            "*first difference at q*",
            "*re-record with --cassette-mode=record*",
            "re-record this test with: pytest --cassette-mode=record "
            "test_changed.py::test_two_calls",
        ]
    )


def test_a_miss_caught_by_the_test_is_not_a_failure(project: Project) -> None:
    project.module(
        "test_caught",
        """
        import cassette as cassette_pkg

        def test_expects_a_miss(cassette):
            with pytest.raises(cassette_pkg.CassetteMiss, match="--cassette-mode=record"):
                cassette.call({"q": "x"}, live=live("x"))
        """,
    )
    project.run().assert_outcomes(passed=1)
    assert project.live_calls() == []
