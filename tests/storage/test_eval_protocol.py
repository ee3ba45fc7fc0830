"""eval-protocol playback files open read-only as cassettes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cassette


def _ep_file(path: Path) -> list[list[dict]]:
    """Lines as eval-protocol writes them: full history after each tool call."""
    histories = []
    lines = []
    for env in range(2):
        history: list[dict] = [{"role": "user", "content": f"task {env}"}]
        for step in range(2):
            call = {
                "id": f"c{step}",
                "type": "function",
                "function": {"name": "move", "arguments": f'{{"d": {step}}}'},
            }
            history.append(
                {"role": "assistant", "content": f"think {env}.{step}", "tool_calls": [call]}
            )
            history.append({"role": "tool", "tool_call_id": f"c{step}", "content": f"ok {step}"})
            lines.append({"env_index": env, "step": step, "messages": list(history)})
        histories.append(history)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return histories


def test_each_line_serves_its_last_assistant_message(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    histories = _ep_file(path)
    with cassette.open(path) as cas:
        assert cas.mode is cassette.Mode.REPLAY and cas.index.eval_protocol
        for env in range(2):
            history = histories[env]
            for step in range(2):
                sent = history[: 1 + 2 * step]  # what the policy saw before answering
                resp = cas.call(
                    {"model": "any", "tools": [], "messages": sent}, live=None, env_index=env
                )  # type: ignore[arg-type]
                msg = resp["choices"][0]["message"]
                assert msg == history[1 + 2 * step]
                assert msg["tool_calls"][0]["function"]["arguments"] == f'{{"d": {step}}}'


def test_messages_are_compared_and_a_changed_history_fails(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    histories = _ep_file(path)
    with cassette.open(path, "replay") as cas:
        changed = [{"role": "user", "content": "another task"}]
        with pytest.raises(cassette.CassetteMismatch, match=r"messages\[0\]\.content"):
            cas.call({"messages": changed}, live=lambda: {}, env_index=0)
    with cassette.open(path, "replay", match="key") as cas:
        resp = cas.call({"messages": []}, live=lambda: {}, env_index=1)
        assert resp["choices"][0]["message"] == histories[1][1]


def test_playback_files_are_read_only(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    _ep_file(path)
    with pytest.raises(cassette.CassetteModeError, match="cassette convert --from ep"):
        cassette.open(path, "append")


def test_line_without_assistant_message_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "ep.jsonl"
    path.write_text(
        json.dumps({"env_index": 0, "step": 0, "messages": [{"role": "user", "content": "x"}]})
        + "\n"
    )
    with pytest.raises(cassette.CassetteFormatError, match=r"ep.jsonl:1: .*no assistant message"):
        cassette.open(path, "replay")
