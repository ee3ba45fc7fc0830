"""`cassette convert --from ep`: an eval-protocol playback file becomes a cassette."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cassette
from cassette.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
EP = GOLDEN / "ep_playback.jsonl"


def convert(*args: str) -> Result:
    return CliRunner().invoke(main, ["convert", "--from", "ep", *args])


def test_each_line_becomes_a_delta_encoded_interaction_that_replays(tmp_path: Path) -> None:
    out = tmp_path / "ep.jsonl"
    result = convert(str(EP), str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == f"converted {EP} to {out}: 4 interactions, 2 episodes\n"
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["type"] == "header"
    assert lines[0]["meta"]["converted_from"] == "ep_playback.jsonl"
    assert [(x["env_index"], x["step"]) for x in lines[1:]] == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert (
        "delta" in lines[2]
        and {"$ref": ["choices", 0, "message"]} in (lines[2]["request"]["messages"])
    )
    assert CliRunner().invoke(main, ["validate", str(out)]).exit_code == 0
    # a policy that sends the same histories is served the recorded assistant messages
    source = [json.loads(line) for line in EP.read_text().splitlines()]
    with cassette.open(out, "replay") as cas:
        for line in source:
            history = line["messages"]
            sent = history[: len(history) - 2]  # before the last assistant message
            got = cas.call({"messages": sent}, live=None, env_index=line["env_index"])  # type: ignore[arg-type]
            assert got["choices"][0]["message"] == history[-2]
        assert cas.unused() == []


def test_secrets_in_the_playback_file_are_redacted(tmp_path: Path) -> None:
    src = tmp_path / "leaky_ep.jsonl"
    secret = "sk-fakeLeakedInAPrompt0123456789"
    messages = [
        {"role": "user", "content": f"use {secret}"},
        {"role": "assistant", "content": "done"},
    ]
    src.write_text(json.dumps({"env_index": 0, "step": 0, "messages": messages}) + "\n")
    out = tmp_path / "out.jsonl"
    assert convert(str(src), str(out)).exit_code == 0
    text = out.read_text()
    assert secret not in text and "[REDACTED]" in text and '"redacted":1' in text


def test_an_existing_out_needs_force(tmp_path: Path) -> None:
    out = tmp_path / "ep.jsonl"
    out.write_text("keep me\n")
    result = convert(str(EP), str(out))
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"error: {out} exists; pass --force to overwrite it, or name another file\n"
    )
    assert out.read_text() == "keep me\n"
    assert convert(str(EP), str(out), "--force").exit_code == 0
    assert out.read_text().startswith('{"type":"header"')


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda d: GOLDEN / "run_a.jsonl",
            "run_a.jsonl is not an eval-protocol playback file (lines of env_index, step, "
            "messages); it is a cassette already: use it as it is (`cassette show ",
        ),
        (
            lambda d: (d / "empty.jsonl", (d / "empty.jsonl").touch())[0],
            "empty.jsonl holds no line; name an eval-protocol playback file",
        ),
        (lambda d: d / "missing.jsonl", "no such file or directory"),
        (
            lambda d: _write(d / "no_answer.jsonl", [{"role": "user", "content": "hi"}]),
            "no_answer.jsonl:1: eval-protocol line has no assistant message",
        ),
    ],
)
def test_bad_inputs_are_one_line_exit_2(tmp_path: Path, make: object, says: str) -> None:
    src = make(tmp_path)  # type: ignore[operator]
    out = tmp_path / "out.jsonl"
    result = convert(str(src), str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert says in result.stderr
    assert not out.exists()


def test_only_ep_is_known() -> None:
    result = CliRunner().invoke(main, ["convert", "--from", "csv", "a", "b"])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert (
        "Invalid value for '--from'" in result.stderr and "cassette convert --help" in result.stderr
    )


def _write(path: Path, messages: list[dict]) -> Path:
    path.write_text(json.dumps({"env_index": 0, "step": 0, "messages": messages}) + "\n")
    return path
