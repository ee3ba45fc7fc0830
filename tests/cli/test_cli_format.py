"""`--format json` on `show`, `stats` and `validate`: the machine form of each command."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

import cassette
from cassette.cli import main


def _record(path: Path) -> list[tuple[int, dict, dict]]:
    """Two episodes of three growing steps (stored as deltas); returns what was sent."""
    sent = []
    with cassette.open(path, mode="record") as cas:
        for env in (0, 1):
            messages = [{"role": "system", "content": "be brief"}]
            for step in range(3):
                messages.append({"role": "user", "content": f"q{env}.{step}"})
                request = {"model": "m", "temperature": 0.5, "messages": list(messages)}
                answer = {"role": "assistant", "content": f"a{env}.{step}"}
                response = {"id": f"r{env}{step}", "choices": [{"index": 0, "message": answer}]}
                cas.call(request, live=lambda r=response: r, env_index=env)
                sent.append((env, request, response))
                messages.append(answer)
            cas.outcome(env, reward=float(env), terminated=True)
    return sent


def _json(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, list(args))
    assert "\x1b" not in result.stdout
    return result.exit_code, json.loads(result.stdout)


def test_show_json_holds_every_step_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    sent = _record(path)
    code, data = _json("show", str(path), "--format", "json")
    assert code == 0 and data["path"] == str(path)
    assert [e["env_index"] for e in data["episodes"]] == [0, 1]
    assert [e["outcome"]["reward"] for e in data["episodes"]] == [0.0, 1.0]
    episodes = data["episodes"]
    got = [(e["env_index"], s["request"], s["response"]) for e in episodes for s in e["steps"]]
    assert got == sent  # full requests, rebuilt from the delta encoding
    steps = data["episodes"][1]["steps"]
    assert [(s["channel"], s["step"], s["error"]) for s in steps] == [
        ("llm", k, None) for k in range(3)
    ]
    assert all("latency_ms" in s["meta"] for s in steps)


def test_show_json_filters_like_text(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    sent = _record(path)
    code, data = _json("show", str(path), "--env", "1", "--format", "json")
    assert code == 0 and [e["env_index"] for e in data["episodes"]] == [1]
    assert [s["request"] for s in data["episodes"][0]["steps"]] == [r for e, r, _ in sent if e == 1]
    code, data = _json("show", str(path), "--channel", "llm", "--format", "json")
    assert code == 0 and sum(len(e["steps"]) for e in data["episodes"]) == 6
    result = CliRunner().invoke(main, ["show", str(path), "--env", "7", "--format", "json"])
    assert result.exit_code == 2 and "no episode 7" in result.stderr


def test_stats_format_json_is_the_json_flag(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    code, data = _json("stats", str(path), "--format", "json")
    assert code == 0 and (data["episodes"], data["interactions"]) == (2, 6)
    assert data["outcomes"]["reward"]["max"] == 1.0
    assert _json("stats", str(path), "--json") == (code, data)  # the older spelling


def test_validate_json_lists_faults_with_the_same_exit_code(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    code, data = _json("validate", str(path), "--format", "json")
    assert code == 0 and data["ok"] is True and data["faults"] == []
    assert "6 interactions" in data["summary"]
    lines = path.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b'"r00"', b'"rX0"')  # a response changed on disk
    path.write_bytes(b"".join(lines))
    code, data = _json("validate", str(path), "--format", "json")
    assert code == 1 and data["ok"] is False
    assert [(f["line"], "checksum" in f["message"]) for f in data["faults"]] == [(2, True)]


def test_an_unknown_format_names_the_choices(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    result = CliRunner().invoke(main, ["stats", str(path), "--format", "yaml"])
    assert result.exit_code == 2 and "'text', 'json'" in result.stderr
