"""``--cassette-dir`` (and ini ``cassette_dir``): where default and marker paths live."""

from __future__ import annotations

import pytest

from tests.helpers.plugin_project import TWO_CALLS, Project

MARKED = """
@pytest.mark.cassette(path="named/marked.jsonl")
def test_marked(cassette):
    cassette.call({"q": "m"}, live=live("m"))
"""


def test_relative_dir_is_taken_from_the_invocation_dir(project: Project) -> None:
    project.module("test_dir", TWO_CALLS + MARKED)
    sub = project.path / "sub"
    sub.mkdir()
    project.pytester.chdir()
    result = project.run("--cassette-mode=record", "--cassette-dir=recs")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["cassette: mode=record (from --cassette-mode), dir=recs"])
    assert (project.path / "recs" / "test_dir" / "test_two_calls.jsonl").is_file()
    assert (project.path / "recs" / "named" / "marked.jsonl").is_file()
    assert not project.cassettes.exists()
    # the same files replay; without the option the default dir has nothing
    project.run("--cassette-dir=recs").assert_outcomes(passed=2)
    project.run().assert_outcomes(failed=2)
    assert len(project.live_calls()) == 3


def test_absolute_dir(project: Project, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    project.module("test_abs", TWO_CALLS)
    result = project.run("--cassette-mode=record", f"--cassette-dir={outside}")
    result.assert_outcomes(passed=1)
    assert (outside / "test_abs" / "test_two_calls.jsonl").is_file()
    result.stdout.fnmatch_lines([f"cassette: mode=record (from --cassette-mode), dir={outside}"])


def test_ini_dir_is_relative_to_rootdir_and_the_option_wins(project: Project) -> None:
    project.pytester.makeini("[pytest]\ncassette_dir = fixtures/cas\nfilterwarnings = error\n")
    project.module("test_ini_dir", TWO_CALLS)
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    assert (project.path / "fixtures/cas/test_ini_dir/test_two_calls.jsonl").is_file()
    project.run("--cassette-mode=record", "--cassette-dir=other").assert_outcomes(passed=1)
    assert (project.path / "other/test_ini_dir/test_two_calls.jsonl").is_file()
