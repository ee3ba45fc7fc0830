"""``@pytest.mark.cassette(path=..., mode=..., match=..., ignore=[...])``."""

from __future__ import annotations

from tests.helpers.plugin_project import Project


def test_marker_is_registered_with_a_description(project: Project) -> None:
    result = project.run("--markers")
    result.stdout.fnmatch_lines(
        ["@pytest.mark.cassette(path=None, mode=None, match='strict', ignore=()): *fixture*"]
    )
    project.module("test_known", "@pytest.mark.cassette\ndef test_marked():\n    pass\n")
    project.run("--strict-markers").assert_outcomes(passed=1)


def test_path_relative_positional_and_absolute(project: Project) -> None:
    elsewhere = project.path / "elsewhere" / "abs.jsonl"
    project.module(
        "test_paths",
        f"""
        @pytest.mark.cassette(path="shared/rel.jsonl")
        def test_relative(cassette):
            cassette.call({{"q": "rel"}}, live=live("rel"))

        @pytest.mark.cassette("shared/pos.jsonl.gz")
        def test_positional(cassette):
            cassette.call({{"q": "pos"}}, live=live("pos"))

        @pytest.mark.cassette(path={str(elsewhere)!r})
        def test_absolute(cassette):
            cassette.call({{"q": "abs"}}, live=live("abs"))
        """,
    )
    project.run("--cassette-mode=record").assert_outcomes(passed=3)
    assert (project.cassettes / "shared" / "rel.jsonl").is_file()
    assert (project.cassettes / "shared" / "pos.jsonl.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert elsewhere.is_file()
    assert not (project.cassettes / "test_paths").exists()
    project.run().assert_outcomes(passed=3)
    assert project.live_calls() == ["rel", "pos", "abs"]


def test_marker_mode_applies_below_the_option(project: Project) -> None:
    project.module(
        "test_auto",
        """
        @pytest.mark.cassette(mode="auto")
        def test_auto(cassette):
            cassette.call({"q": "a"}, live=live("a"))
        """,
    )
    project.run().assert_outcomes(passed=1)  # auto: no file yet, so it records
    assert project.cassette("test_auto", "test_auto").is_file()
    project.run().assert_outcomes(passed=1)  # auto: the file exists, so it replays
    assert project.live_calls() == ["a"]
    project.run("--cassette-mode=passthrough").assert_outcomes(passed=1)  # option wins
    assert project.live_calls() == ["a", "a"]

    project.cassette("test_auto", "test_auto").unlink()
    result = project.run("--cassette-mode=replay")  # the option wins over the marker
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*(mode=replay, from --cassette-mode)"])


def test_ignore_and_match_from_the_marker(project: Project) -> None:
    body = """
    TEMPERATURE, QUESTION = 0.0, "old"
    pytestmark = pytest.mark.cassette(ignore=["temperature"])

    def test_ignored(cassette):
        cassette.call({"q": "x", "temperature": TEMPERATURE}, live=live("x"))

    @pytest.mark.cassette(match="key")
    def test_by_key(cassette):
        cassette.call({"q": QUESTION}, live=live("k"))

    @pytest.mark.cassette(ignore=[])
    def test_strict(cassette):
        cassette.call({"q": "s", "temperature": TEMPERATURE}, live=live("s"))
    """
    project.module("test_match", body)
    project.run("--cassette-mode=record").assert_outcomes(passed=3)
    project.module("test_match", body.replace('0.0, "old"', '0.7, "new"'))
    result = project.run("-rA")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "PASSED test_match.py::test_ignored",
            "PASSED test_match.py::test_by_key",
            "FAILED test_match.py::test_strict - cassette.errors.CassetteMismatch*",
        ]
    )
    assert project.live_calls() == ["x", "k", "s"]


def test_closest_marker_wins_key_by_key(project: Project) -> None:
    project.module(
        "test_layers",
        """
        pytestmark = pytest.mark.cassette(mode="passthrough", path="module.jsonl")

        @pytest.mark.cassette(mode="record")
        class TestLayered:
            @pytest.mark.cassette(path="inner.jsonl")
            def test_inner(self, cassette):
                assert cassette.mode.value == "record"
                assert cassette.path.name == "inner.jsonl"

            def test_class(self, cassette):
                assert cassette.mode.value == "record"
                assert cassette.path.name == "module.jsonl"

        def test_module(cassette):
            assert cassette.mode.value == "passthrough"
        """,
    )
    project.run().assert_outcomes(passed=3)


def test_bad_marker_arguments_error_the_test(project: Project) -> None:
    project.module(
        "test_bad",
        """
        @pytest.mark.cassette(pth="typo.jsonl")
        def test_typo(cassette):
            pass

        @pytest.mark.cassette(mode="rewind")
        def test_bad_mode(cassette):
            pass

        @pytest.mark.cassette(match="fuzzy")
        def test_bad_match(cassette):
            pass
        """,
    )
    result = project.run()
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines_random(
        [
            "*@pytest.mark.cassette takes path (also positional), mode, match and ignore;*pth*",
            "*CassetteModeError: unknown cassette mode 'rewind'; use one of replay, record, *",
            "*CassetteModeError: unknown match 'fuzzy'; use 'strict' or 'key'",
        ]
    )
