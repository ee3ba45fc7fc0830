"""The cassette command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cassette.cli import main


def test_demo_replays_the_bundled_cassette_offline() -> None:
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 0, result.output
    assert "6 model calls served, 0 live" in result.output
    assert result.output.count("reward=1") == 3
    assert "calculator" in result.output and "The answer is 391." in result.output


def test_demo_fails_with_one_line_when_the_agent_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cassette.demo

    tasks = [("What is 17 * 24?", 408), *cassette.demo.TASKS[1:]]
    monkeypatch.setattr(cassette.demo, "TASKS", tasks)
    result = CliRunner().invoke(main, ["demo"])
    assert result.exit_code == 2
    assert "request differs from the recording" in result.output
    assert "messages[1].content" in result.output


def test_demo_on_a_missing_cassette_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["demo", "--cassette", str(tmp_path / "missing.jsonl")])
    assert result.exit_code == 2
    assert "does not exist" in result.output
