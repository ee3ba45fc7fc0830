"""The ``cassette`` fixture: default path, record then replay, naming, lifecycle."""

from __future__ import annotations

import pytest

from tests.helpers.plugin_project import TWO_CALLS, Project


def test_record_then_replay_at_the_default_path(project: Project) -> None:
    project.module("test_agent", TWO_CALLS)

    result = project.run("--cassette-mode=record")
    result.assert_outcomes(passed=1)
    path = project.cassette("test_agent", "test_two_calls")
    assert [i["request"] for i in project.interactions(path)] == [{"q": "one"}, {"q": "two"}]
    assert project.live_calls() == ["one", "two"]
    recorded = project.answers()
    assert [a["answer"] for a in recorded] == [{"n": 1, "tag": "one"}, {"n": 2, "tag": "two"}]
    before = path.read_bytes()

    result = project.run()  # replay is the default
    result.assert_outcomes(passed=1)
    assert project.live_calls() == ["one", "two"]  # live was not called again
    assert project.answers() == recorded
    assert path.read_bytes() == before
    assert project.side_files() == []


def test_names_of_class_and_parametrized_tests(project: Project) -> None:
    project.module(
        "test_names",
        """
        class TestGroup:
            def test_method(self, cassette):
                cassette.call({"q": "m"}, live=live("m"))

        @pytest.mark.parametrize("arg", ["plain", "a b/c:d", "a b/c:e"])
        def test_param(cassette, arg):
            cassette.call({"q": arg}, live=live(arg))
        """,
    )
    project.run("--cassette-mode=record").assert_outcomes(passed=4)
    names = sorted(p.name for p in (project.cassettes / "test_names").iterdir())
    assert len(names) == 4, names  # ids that sanitise alike still get their own file
    assert "TestGroup.test_method.jsonl" in names
    assert "test_param[plain].jsonl" in names
    odd = [n for n in names if n.startswith("test_param[a_b_c_")]
    assert len(odd) == 2
    for name in odd:
        assert name[: -len(".jsonl")].rsplit("-", 1)[1].isalnum()
    project.run().assert_outcomes(passed=4)
    assert len(project.live_calls()) == 4


def test_fixture_yields_an_open_cassette_and_closes_it(project: Project) -> None:
    project.module(
        "test_life",
        """
        import cassette as cassette_pkg

        SEEN = []

        def test_first(cassette):
            assert isinstance(cassette, cassette_pkg.Cassette)
            assert not cassette.closed
            assert cassette.mode is cassette_pkg.Mode.PASSTHROUGH
            SEEN.append(cassette)

        def test_after():
            assert SEEN[0].closed
        """,
    )
    project.run("--cassette-mode=passthrough").assert_outcomes(passed=2)


def test_a_test_without_calls_in_replay_needs_no_file(project: Project) -> None:
    project.module("test_quiet", "def test_nothing(cassette):\n    pass\n")
    project.run().assert_outcomes(passed=1)
    assert not project.cassettes.exists()


def test_a_replay_gives_the_sdks_a_placeholder_key_for_the_test_only(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # CI: no key at all
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    project.module(
        "test_replay_key_placeholder",
        "import os\n"
        "from openai import OpenAI\n"
        "def test_client(cassette):\n"
        "    OpenAI()  # refuses to start without a key\n"
        "    assert os.environ['ANTHROPIC_API_KEY']\n"
        "def test_after():\n"
        "    assert 'OPENAI_API_KEY' not in os.environ\n",
    )
    project.run().assert_outcomes(passed=2)
    project.run("--cassette-mode=record").assert_outcomes(failed=1, passed=1)  # a live key
