"""`cassette demo`: the README's main job."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main


def test_demo_records_through_the_sdk_and_replays_identically(tmp_path: Path) -> None:
    out = tmp_path / "demo.jsonl"
    result = CliRunner().invoke(main, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "transcripts and rewards: identical" in result.output
    assert f"cassette: {out}" in result.output
    assert "random mode" in result.output
    assert result.output.count("reward=") == 3
    # what the demo wrote is a real cassette of three episodes through the openai adapter
    with cassette.open(out, "replay") as cas:
        assert sorted(cas.index.outcomes) == [0, 1, 2]
        assert all(e.param("endpoint") == "chat.completions" for e in cas.index.entries.values())
        assert len(cas.index.entries) == 6


def test_demo_bundled_replays_the_fixture_offline() -> None:
    result = CliRunner().invoke(main, ["demo", "--bundled"])
    assert result.exit_code == 0, result.output
    assert "6 model calls served, 0 live" in result.output
    assert result.output.count("reward=1") == 3
    assert 'add({"a": 17, "b": 25})' in result.output and "The sum is 42." in result.output


def test_demo_bundled_fails_in_one_line_when_the_agent_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import cassette.cli.demo

    monkeypatch.setattr(cassette.cli.demo, "TASKS", ["Add 17 and 26, then tell me the sum."])
    result = CliRunner().invoke(main, ["demo", "--bundled"])
    assert result.exit_code == 2
    assert "request differs from the recording" in result.output
    assert "messages[1].content" in result.output


def test_demo_live_without_a_key_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["demo", "--live"])
    assert result.exit_code == 2
    assert "OPENAI_API_KEY" in result.output


def test_demo_out_overwrites_an_earlier_demo_but_not_a_cassette_of_yours(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    for _ in range(2):  # the README runs it twice into the same name: an earlier demo goes
        assert CliRunner().invoke(main, ["demo", "--out", str(out)]).exit_code == 0
    mine = tmp_path / "mine.jsonl"
    with cassette.open(mine, "record") as cas:
        cas.call({"messages": [{"role": "user", "content": "hi"}]}, live=lambda: {"choices": []})
    kept = mine.read_bytes()
    refused = CliRunner().invoke(main, ["demo", "--out", str(mine)])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr == (
        f"error: {mine} exists and is not a demo recording; pass --force to overwrite it\n"
    )
    assert mine.read_bytes() == kept
    forced = CliRunner().invoke(main, ["demo", "--out", str(mine), "--force"])  # as it says
    assert forced.exit_code == 0 and "transcripts and rewards: identical" in forced.stdout
    (tmp_path / "notes.txt").write_text("not a cassette")
    assert CliRunner().invoke(main, ["demo", "--out", str(tmp_path / "notes.txt")]).exit_code == 2
