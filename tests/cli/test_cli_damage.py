"""Odd and hostile inputs to the reading commands: one ``error:`` line or a clean answer,
never a traceback or a hang."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import cassette
from cassette.adapters.openai._errors import OpenAIErrors
from cassette.cli import main
from cassette.storage.index import load_index

ROOT = Path(__file__).resolve().parents[2]
CLI = "import sys; from cassette.cli import main; sys.exit(main())"
Json = dict[str, Any]


def _recorded(path: Path, response: Json, **meta: Any) -> Path:
    with cassette.open(path, "record") as cas:
        cas.call(
            {"model": "m", "messages": [{"role": "user", "content": "hi"}]}, live=lambda: response
        )
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
@pytest.mark.parametrize("command", [["show"], ["stats"], ["validate"], ["diff", "{good}"]])
def test_a_fifo_is_refused_at_once(tmp_path: Path, command: list[str]) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    good = _recorded(tmp_path / "good.jsonl", {"ok": 1})
    args = [a.format(good=good) for a in command] + [str(fifo)]
    proc = subprocess.run(
        [sys.executable, "-c", CLI, *args],
        capture_output=True,
        text=True,
        timeout=20,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2 if command != ["validate"] else proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "not a regular file" in proc.stdout + proc.stderr


def test_a_gzip_of_millions_of_blank_lines_opens_quickly(tmp_path: Path) -> None:
    good = _recorded(tmp_path / "good.jsonl", {"ok": 1}).read_bytes()
    head, rest = good.split(b"\n", 1)
    path = tmp_path / "blank.jsonl.gz"
    path.write_bytes(gzip.compress(head + b"\n" + b"\n" * 20_000_000 + rest))
    assert path.stat().st_size < 40_000
    started = time.perf_counter()
    index = load_index([path])
    assert time.perf_counter() - started < 3  # 7-12 s before blank lines were scanned
    assert [e.line for e in index.entries.values()] == [20_000_002]
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 0, result.output


def test_odd_stream_chunks_are_shown_and_counted(tmp_path: Path) -> None:
    chunks = [
        {"choices": [{"delta": {"tool_calls": [{"index": [1], "function": 3}]}}]},
        {"choices": [{"delta": {"tool_calls": 5}}]},
        {"choices": [7]},
        {"choices": [{"delta": {"tool_calls": [{"index": "x", "function": {"name": 5}}]}}]},
    ]
    path = _recorded(tmp_path / "odd.jsonl", {"chunks": chunks})
    for args in (["show", str(path)], ["stats", str(path)], ["stats", "--json", str(path)]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output, result.exception)


def test_stats_json_with_an_int_beyond_64_bits(tmp_path: Path) -> None:
    usage = {"prompt_tokens": 2**64 - 1, "completion_tokens": 2**64 - 1, "total_tokens": 0}
    path = _recorded(tmp_path / "big.jsonl", {"choices": [], "usage": usage})
    result = CliRunner().invoke(main, ["stats", "--json", str(path)])
    assert result.exit_code == 0, (result.output, result.exception)
    assert orjson.loads(result.output)["tokens"]["total"] == float(2**65 - 2)


def test_show_reports_a_lazy_format_error_as_one_line(tmp_path: Path) -> None:
    """A reference that does not resolve is found only when show rebuilds the request."""
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        messages: list[Json] = [{"role": "user", "content": "hi"}]
        for step in range(3):
            answer = {"role": "assistant", "content": f"a{step}"}
            cas.call(
                {"messages": list(messages)}, live=lambda a=answer: {"choices": [{"message": a}]}
            )
            messages += [answer, {"role": "user", "content": "on"}]
    raw = path.read_bytes().replace(b'{"$ref":["choices",0,"message"]}', b'{"$ref":["nope"]}', 1)
    path.write_bytes(raw)
    result = CliRunner().invoke(main, ["show", str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 0, result.output
    assert "run.jsonl:3: left out" in result.output  # the warning names the line


def test_a_damaged_recorded_openai_error_replays_as_a_recorded_error(tmp_path: Path) -> None:
    import openai

    client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")
    codec = OpenAIErrors(client, "/chat/completions")
    good = {"kind": "status", "status_code": 429, "headers": {"retry-after": "1"}, "body": {}}
    assert isinstance(
        codec.load({"type": "openai.RateLimitError", "message": "m", "data": good}),
        openai.RateLimitError,
    )
    for data in (
        {**good, "status_code": "429"},  # flipped to a string
        {k: v for k, v in good.items() if k != "status_code"},
        {**good, "headers": [["retry-after", "1"]]},
        {**good, "headers": {"retry-after": 1}},
        [1, 2],
        "text",
    ):
        assert codec.load({"type": "openai.RateLimitError", "message": "m", "data": data}) is None
