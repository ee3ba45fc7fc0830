"""Record mode: a passing test rewrites its cassette, a test that does not pass keeps it."""

from __future__ import annotations

from tests.helpers.plugin_project import TWO_CALLS, Project


def test_passing_test_rewrites_the_cassette(project: Project) -> None:
    project.module("test_again", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    path = project.cassette("test_again", "test_two_calls")
    first = [i["response"]["n"] for i in project.interactions(path)]
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    assert [i["response"]["n"] for i in project.interactions(path)] == [3, 4] != first
    assert project.side_files() == []


def test_failing_test_keeps_the_old_cassette(project: Project) -> None:
    project.module("test_flaky", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    path = project.cassette("test_flaky", "test_two_calls")
    good = path.read_bytes()

    project.module("test_flaky", TWO_CALLS + "    assert False, 'the agent got it wrong'\n")
    result = project.run("--cassette-mode=record")
    result.assert_outcomes(failed=1)
    assert project.live_calls() == ["one", "two", "one", "two"]  # it did record live
    assert path.read_bytes() == good  # but the good cassette is untouched
    [side] = project.side_files()
    assert side.name.startswith("test_two_calls.jsonl.") and side.suffix == ".partial"
    assert [i["response"]["n"] for i in project.interactions(side)] == [3, 4]
    result.stdout.fnmatch_lines(
        [
            "E * AssertionError: the agent got it wrong",
            f"*cassette: {path} was left untouched; what this run recorded is in {side}*",
        ]
    )
    project.module("test_flaky", TWO_CALLS)
    project.run().assert_outcomes(passed=1)  # replays the good recording
    assert [a["answer"]["n"] for a in project.answers()][-2:] == [1, 2]


def test_failure_before_any_call_leaves_no_side_file(project: Project) -> None:
    project.module("test_early", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    path = project.cassette("test_early", "test_two_calls")
    good = path.read_bytes()
    project.module(
        "test_early",
        """
        def test_two_calls(cassette):
            raise RuntimeError("before the model")

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture setup fails")

        def test_setup_fails(cassette, broken):
            pass

        def test_skipped(cassette):
            pytest.skip("not today")
        """,
    )
    result = project.run("--cassette-mode=record")
    result.assert_outcomes(failed=1, errors=1, skipped=1)
    assert path.read_bytes() == good
    assert project.side_files() == []  # nothing was recorded, so nothing is kept
    assert not project.cassette("test_early", "test_setup_fails").exists()
    assert not project.cassette("test_early", "test_skipped").exists()


def test_xfail_keeps_the_cassette_and_a_passing_xpass_writes_it(project: Project) -> None:
    project.module(
        "test_expected",
        """
        @pytest.mark.xfail(reason="known bad", strict=True)
        def test_known_bad(cassette):
            cassette.call({"q": "bad"}, live=live("bad"))
            assert False

        @pytest.mark.xfail(reason="flaky", strict=False)
        def test_flaky_pass(cassette):
            cassette.call({"q": "ok"}, live=live("ok"))
        """,
    )
    project.run("--cassette-mode=record").assert_outcomes(xfailed=1, xpassed=1)
    assert not project.cassette("test_expected", "test_known_bad").exists()
    assert project.cassette("test_expected", "test_flaky_pass").exists()
