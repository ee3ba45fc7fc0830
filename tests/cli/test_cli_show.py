"""`cassette show`: episodes and steps, rebuilt from the delta encoding."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cassette
from cassette.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
RUN_A = str(GOLDEN / "run_a.jsonl")
SYSTEM = "You are a careful assistant. Use the tools."


def show(*args: str) -> Result:
    return CliRunner().invoke(main, ["show", *args])


def test_show_prints_each_step_once_with_answers_tool_calls_and_outcomes() -> None:
    result = show(RUN_A)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.splitlines()[0] == f"{RUN_A}: 3 episodes, 8 interactions, 3 outcomes"
    assert "episode 0  reward=1  terminated" in out
    assert (
        'episode \'airline/task-3\'  reward=0.5  not terminated  info={"reason":"no seat"}' in out
    )
    assert "user  What is 17 * 23?" in out
    assert '→ calculator({"expression": "17 * 23"})' in out
    assert "tool  [call_0] 391" in out
    assert "assistant  The answer is 391." in out
    # the MCP call, the streamed answer, the recorded error, the redacted key
    assert '"method":"tools/call"' in out and '"text":"rain, 14C"' in out
    assert "assistant  Yes, take an umbrella: rain, 14C." in out
    assert "(streamed, 6 chunks)" in out
    assert "error  openai.RateLimitError: rate limited, retry in 1s" in out
    assert "1 redacted" in out and "812 ms" in out and "20+10 tokens" in out
    # only what each step adds: the system prompt once per episode, not once per request
    assert out.count(SYSTEM) == 3


def test_full_shows_every_message_of_every_request() -> None:
    result = show(RUN_A, "--full")
    assert result.exit_code == 0, result.output
    assert result.stdout.count(SYSTEM) == 7  # one per llm request
    assert result.stdout.count("user  What is 17 * 23?") == 2


def test_env_and_channel_select_what_is_shown() -> None:
    result = show(RUN_A, "--env", "airline/task-3")
    assert result.exit_code == 0, result.output
    assert "episode 'airline/task-3'" in result.stdout
    assert "episode 0" not in result.stdout and "episode 1" not in result.stdout
    result = show(RUN_A, "--env", "1", "--channel", "mcp")
    assert result.exit_code == 0, result.output
    assert "mcp step 0" in result.stdout and "llm step" not in result.stdout


def test_long_content_is_cut_to_one_line_unless_full(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    text = "line one\n" + "word " * 100
    with cassette.open(path, "record") as cas:
        cas.call({"messages": [{"role": "user", "content": text}]}, live=lambda: {"x": 1})
    short = show(str(path))
    assert short.exit_code == 0, short.output
    assert "line one word word" in short.stdout and "…" in short.stdout
    full = show(str(path), "--full")
    assert "line one\n" in full.stdout and "…" not in full.stdout


def test_shards_and_eval_protocol_files_show_too() -> None:
    result = show(str(GOLDEN / "shards"))
    assert result.exit_code == 0, result.output
    assert "4 episodes, 8 interactions, 4 outcomes" in result.stdout
    result = show(str(GOLDEN / "ep_playback.jsonl"))
    assert result.exit_code == 0, result.output
    assert 'step 1  → move({"dx": 1})' in result.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["missing.jsonl"], "no such file or directory: missing.jsonl"),
        ([RUN_A, "--env", "7"], "no episode 7 in"),
        ([RUN_A, "--channel", "tools"], "(it holds llm, mcp); pick one of those"),
        ([], "Missing argument 'PATH'"),
    ],
)
def test_errors_are_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = show(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert says in result.stderr


def test_a_broken_file_is_one_line_that_points_at_validate(tmp_path: Path) -> None:
    path = tmp_path / "broken.jsonl"
    shutil.copy(RUN_A, path)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = "{oops\n"
    path.write_text("".join(lines))
    result = show(str(path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert f"{path}:3: not valid JSON" in result.stderr
    assert "cassette validate" in result.stderr


def test_the_head_counts_in_the_singular_where_there_is_one(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"messages": [{"role": "user", "content": "hi"}]}, live=lambda: {"choices": []})
        cas.outcome(0, reward=1.0, terminated=True)
    head = show(str(path)).stdout.splitlines()[0]
    assert head == f"{path}: 1 episode, 1 interaction, 1 outcome"
