"""A pytester project for the tests of the pytest plugin: test modules written on the fly.

Each test writes a small test module whose tests use the ``cassette`` fixture with a live
function that logs every call to ``live_calls.log`` and answers with a counter, so record
and replay are observable: replay adds no line to the log and returns the recorded counter.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

__all__ = ["TWO_CALLS", "Project"]

PRELUDE = '''
import json
from pathlib import Path

import pytest

HERE = Path(__file__).parent
LOG = HERE / "live_calls.log"


def live(tag):
    """A live model stand-in: logs the call and answers with a counter."""
    def fn():
        with LOG.open("a") as f:
            f.write(tag + "\\n")
        return {"n": len(LOG.read_text().splitlines()), "tag": tag}
    return fn


def note(test, answer):
    """What the test got, for the outer test to compare between runs."""
    with (HERE / "answers.jsonl").open("a") as f:
        f.write(json.dumps({"test": test, "answer": answer}) + "\\n")
'''

TWO_CALLS = """
def test_two_calls(cassette):
    note("test_two_calls", cassette.call({"q": "one"}, live=live("one")))
    note("test_two_calls", cassette.call({"q": "two"}, live=live("two")))
"""


class Project:
    """A pytester directory with helpers to write test modules and inspect the results."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("CASSETTE_MODE", raising=False)
        self.pytester = pytester
        self.path = pytester.path
        self.cassettes = pytester.path / "tests" / "cassettes"
        pytester.makeini("[pytest]\nfilterwarnings = error\n")

    def module(self, name: str, body: str) -> Path:
        source = PRELUDE + textwrap.dedent(body)
        return self.pytester.makepyfile(**{name: source})

    def run(self, *args: str) -> pytest.RunResult:
        """Run pytest in process; hypothesis's plugin would import hypothesis every run."""
        shutil.rmtree(self.path / "__pycache__", ignore_errors=True)  # modules change in place
        return self.pytester.runpytest("-p", "no:cacheprovider", "-p", "no:hypothesispytest", *args)

    def live_calls(self) -> list[str]:
        log = self.path / "live_calls.log"
        return log.read_text().splitlines() if log.exists() else []

    def answers(self) -> list[dict[str, Any]]:
        """The answers noted since the last call (the file is emptied)."""
        path = self.path / "answers.jsonl"
        if not path.exists():
            return []
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        path.unlink()
        return lines

    def interactions(self, path: Path) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        return [line for line in lines if line["type"] == "interaction"]

    def cassette(self, module: str, test: str) -> Path:
        """The default cassette path of ``module::test``."""
        return self.cassettes / module / f"{test}.jsonl"

    def side_files(self) -> list[Path]:
        return sorted(self.path.rglob("*.partial"))
