"""`cassette stats`: the numbers of a cassette, as text and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.cli.stats import percentile

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
RUN_A = str(GOLDEN / "run_a.jsonl")
# meta.latency_ms of run_a, as make_golden.py scripts them
LATENCIES = sorted([812.0, 640.0, 1210.0, 35.0, 930.0, 401.0, 120.0, 388.0])


def stats_json(path: str) -> dict:
    result = CliRunner().invoke(main, ["stats", path, "--json"])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout
    return json.loads(result.stdout)


def test_json_holds_every_number() -> None:
    data = stats_json(RUN_A)
    assert data["path"] == RUN_A
    assert (data["episodes"], data["interactions"], data["errors"]) == (3, 8, 1)
    assert data["channels"]["llm"]["steps"] == 7 and data["channels"]["mcp"]["steps"] == 1
    assert data["channels"]["llm"]["episodes"] == 3 and data["channels"]["mcp"]["episodes"] == 1
    assert data["models"] == {"gpt-test-large": 4, "gpt-test-small": 3}
    assert data["tokens"] == {"input": 170, "output": 49, "total": 219, "cached": 0, "reasoning": 0}
    assert data["cost"] == {"total": 0.0021, "calls_with_cost": 1}
    lat = data["latency_ms"]
    assert lat["count"] == 8 and lat["max"] == 1210.0
    assert lat["p50"] == pytest.approx((401 + 640) / 2)
    assert lat["p90"] == pytest.approx(percentile(LATENCIES, 90), abs=1e-3)
    assert lat["p99"] == pytest.approx(percentile(LATENCIES, 99), abs=1e-3)
    assert data["channels"]["mcp"]["latency_ms"]["p50"] == 35.0
    assert data["tool_calls"] == {"calculator": 2, "get_weather": 1}
    assert data["outcomes"]["count"] == 3 and data["outcomes"]["terminated"] == 2
    reward = data["outcomes"]["reward"]
    assert reward["count"] == 3 and reward["min"] == 0.5 and reward["max"] == 1.0
    assert reward["mean"] == pytest.approx(2.5 / 3)


def test_text_output_is_readable() -> None:
    result = CliRunner().invoke(main, ["stats", RUN_A])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "interactions    8 (llm 7, mcp 1), 1 recorded error" in out
    assert "models          gpt-test-large 4, gpt-test-small 3" in out
    assert "tokens          input 170 output 49 total 219 cached 0" in out
    assert "cost            $0.0021 (recorded on 1 call)" in out
    assert "p50 520.5" in out and "(n=8)" in out
    assert "tool calls      calculator 2, get_weather 1" in out
    assert "outcomes        3 (2 terminated)  reward mean 0.833333  min 0.5  max 1" in out


def test_long_channel_names_keep_a_gap_before_the_numbers(tmp_path: Path) -> None:
    path = tmp_path / "channels.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"q": 1}, live=lambda: {"a": 1}, channel="agent")
        cas.call({"q": 2}, live=lambda: {"a": 2}, channel="user-simulator")
    result = CliRunner().invoke(main, ["stats", str(path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    agent = next(line for line in lines if "latency ms agent" in line)
    assert "latency ms agent  " in agent and "agentp50" not in agent
    longest = next(line for line in lines if "latency ms user-simulator" in line)
    assert "latency ms user-simulator  p50 " in longest
    # a label, two spaces at least, then the value; every value starts in one column
    columns = {len(line) - len(line[2:].split("  ", 1)[1].lstrip()) for line in lines[1:]}
    assert len(columns) == 1


def test_shards_eval_protocol_and_streams_without_usage() -> None:
    data = stats_json(str(GOLDEN / "shards"))
    assert data["episodes"] == 4 and data["outcomes"]["reward"]["mean"] == 1.0
    data = stats_json(str(GOLDEN / "ep_playback.jsonl"))
    assert data["eval_protocol"] is True and data["tool_calls"] == {"move": 4}
    assert data["latency_ms"]["p50"] is None and data["cost"]["total"] is None


def test_tool_calls_of_raw_streams_and_responses_api(tmp_path: Path) -> None:
    path = tmp_path / "shapes.jsonl"
    chunks = [
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "se"}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"name": "arch"}}]}}]},
        {"choices": [{"delta": {}}], "usage": {"input_tokens": 4, "output_tokens": 1}},
    ]
    output = {"output": [{"type": "function_call", "name": "lookup", "arguments": "{}"}]}
    with cassette.open(path, "record") as cas:
        list(cas.stream({"input": "a"}, live=lambda: iter(chunks)))
        cas.call({"input": "b"}, live=lambda: output)
    data = stats_json(str(path))
    assert data["tool_calls"] == {"search": 1, "lookup": 1}
    assert data["tokens"]["input"] == 4 and data["tokens"]["total"] == 5


def test_percentile_interpolates() -> None:
    assert percentile([], 50) is None
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 100) == 4.0
    assert percentile([5.0], 99) == 5.0


def test_missing_file_is_one_line_exit_2() -> None:
    result = CliRunner().invoke(main, ["stats", "nope.jsonl", "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "error: no such file or directory: nope.jsonl; check the path\n"
