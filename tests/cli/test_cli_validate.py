"""`cassette validate`: every fault of a cassette as a path:line line, exit 1."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cassette
from cassette.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"


def validate(*args: str) -> Result:
    return CliRunner().invoke(main, ["validate", *args])


def golden_lines(tmp_path: Path, name: str = "run_a.jsonl") -> tuple[Path, list[str]]:
    path = tmp_path / name
    shutil.copy(GOLDEN / name, path)
    return path, path.read_text().splitlines(keepends=True)


@pytest.mark.parametrize("name", ["run_a.jsonl", "run_b.jsonl", "shards", "ep_playback.jsonl"])
def test_golden_files_are_valid(name: str) -> None:
    result = validate(str(GOLDEN / name))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"OK {GOLDEN / name}: ") and result.stdout.count("\n") == 1


def test_every_fault_is_reported_with_path_and_line(tmp_path: Path) -> None:
    path, lines = golden_lines(tmp_path)
    lines[2] = lines[2].replace('"content":"391"', '"content":"392"')  # edited: hash differs
    lines[3] = "{not json\n"
    lines[5] = lines[5].replace('"step":0', '"step":"zero"')  # the mcp call
    lines[9] = lines[9].replace('"keep":2', '"keep":5')  # more than its base request holds
    lines[10] = lines[10].replace('"keep":4', '"keep":4,"bogus":1')
    lines.insert(4, lines[1])  # line 5: the key (0, llm, 0) again
    lines.append(lines[0])  # a second header
    lines.append('{"type":"comment","text":"hi"}\n')
    path.write_text("".join(lines))
    result = validate(str(path))
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        f"{path}:3: request_sha256 does not match the request rebuilt from the file (a line "
        "was edited, or the cassette was recorded with ignore rules: pass them with "
        "--ignore); re-record this episode",
        f"{path}:4: not valid JSON (unexpected character, expected a string key: line 1 "
        "column 2 (char 1))",
        f"{path}:5: key (env_index=0, channel='llm', step=0) is recorded twice (also "
        f"{path}:2); readers serve the first: `cassette merge OUT {path} --on-conflict "
        "first` writes a copy without the repeats",
        f"{path}:7: interaction step: Input should be a valid integer",
        f"{path}:11: delta keeps 5 messages but its base request has 2",
        f"{path}:12: interaction delta.bogus: Extra inputs are not permitted",
        f"{path}:14: a header after the first line; a file has one, on its first line",
        f"{path}:15: unknown line type 'comment' (expected header, interaction, outcome)",
        f"8 faults in {path}: 1 file, 14 lines (2 headers, 9 interactions, 2 outcomes, "
        "1 unknown-type line), 3 episodes",
    ]


def test_delta_references_are_checked(tmp_path: Path) -> None:
    path, lines = golden_lines(tmp_path)
    lines[2] = lines[2].replace('{"$ref":["choices",0,"message"]}', '{"$ref":["choices",3]}')
    lines[6] = lines[6].replace('"delta":{"base":0', '"delta":{"base":7')
    path.write_text("".join(lines))
    result = validate(str(path))
    assert result.exit_code == 1
    assert f"{path}:3: reference ['choices', 3] not found in the base response" in result.stdout
    assert f"{path}:7: delta base step 7 is not the previous interaction of (1, 'llm')" in (
        result.stdout
    )


def test_header_faults(tmp_path: Path) -> None:
    path, lines = golden_lines(tmp_path)
    path.write_text("".join(lines[1:]))
    result = validate(str(path))
    assert result.exit_code == 1
    assert f"{path}:1: no header" in result.stdout
    path.write_text(lines[0].replace('"version":1', '"version":7') + "".join(lines[1:]))
    result = validate(str(path))
    assert f"{path}:1: written in format version 7" in result.stdout
    assert "pip install -U rollout-cassette" in result.stdout
    path.write_text("")
    assert f"{path}: empty file" in validate(str(path)).stdout


def test_a_cut_short_last_line_is_a_warning_only(tmp_path: Path) -> None:
    path, lines = golden_lines(tmp_path)
    path.write_text("".join(lines) + '{"type":"outc')
    result = validate(str(path))
    assert result.exit_code == 0, result.output
    assert f"{path}:13: warning: last line is cut short" in result.stdout
    assert result.stdout.splitlines()[-1].endswith(", 1 warning")


@pytest.mark.parametrize(
    ("content", "fault"),
    [
        (b"hello world\n", "not valid JSON"),
        (b"[1, 2]\n", "expected a JSON object, got list"),
        (b"\x89PNG\r\n\x1a\x00\x00\x00binary", ":2: not valid JSON"),  # not a record cut short
    ],
    ids=["text", "a JSON array", "binary"],
)
def test_a_file_that_is_not_a_cassette_is_not_called_empty(
    tmp_path: Path, content: bytes, fault: str
) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    result = validate(str(path))
    assert result.exit_code == 1, result.output
    assert "empty file" not in result.stdout, result.stdout
    assert f"{path}: no line is a JSON object: not a cassette; check the file name" in result.stdout
    assert fault in result.stdout


def test_a_file_holding_only_a_cut_short_record_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"type":"header","format":"rollo')  # killed while writing its header
    result = validate(str(path))
    assert result.exit_code == 1, result.output
    assert f"{path}: empty file; record into it, or delete it" in result.stdout


def test_keys_are_unique_across_shards(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    shutil.copytree(GOLDEN / "shards", shards)
    shutil.copy(shards / "w0.jsonl", shards / "w9.jsonl")
    result = validate(str(shards))
    assert result.exit_code == 1
    want = (
        f"{shards / 'w9.jsonl'}:2: key (env_index=0, channel='llm', step=0) is recorded "
        f"twice (also {shards / 'w0.jsonl'}:2); readers serve the first: `cassette merge OUT "
        f"{shards}/ --on-conflict first` writes a copy without the repeats"  # the directory's
    )
    assert want in result.stdout


def test_gzip_cassettes_validate(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress((GOLDEN / "run_a.jsonl").read_bytes()))
    result = validate(str(path))
    assert result.exit_code == 0, result.output


def test_ignore_rules_of_the_recording_are_passed_on(tmp_path: Path) -> None:
    path = tmp_path / "ignored.jsonl"
    with cassette.open(path, "record", ignore=["temperature"]) as cas:
        cas.call({"messages": [], "temperature": 0.7}, live=lambda: {"ok": True})
    # the header holds the rules (meta.ignore): a fresh recording is valid as it is
    assert validate(str(path)).exit_code == 0, validate(str(path)).output
    header, *rest = path.read_text().splitlines(keepends=True)
    path.write_text(header.replace('"ignore":["temperature"],', "") + "".join(rest))
    result = validate(str(path))  # a header without them: they must be passed
    assert result.exit_code == 1
    assert "pass them with --ignore" in result.stdout
    assert validate(str(path), "--ignore", "temperature").exit_code == 0
    bad = validate(str(path), "--ignore", "a..b[")
    assert bad.exit_code == 2 and bad.stderr.startswith("error: cannot parse ignore path")


def test_redacted_requests_are_not_hash_checked(tmp_path: Path) -> None:
    path, lines = golden_lines(tmp_path)
    assert '"redacted":1' in lines[8]
    lines[8] = lines[8].replace('"api_key":"[REDACTED]"', '"api_key":"[SCRUBBED]"', 1)
    path.write_text("".join(lines))
    assert validate(str(path)).exit_code == 0  # the recorded hash is of the live request
    lines[8] = lines[8].replace("Change my flight", "Cancel my flight")
    path.write_text("".join(lines))
    result = validate(str(path))  # the next step keeps that message: its hash differs
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{path}:10: request_sha256 does not match")


def test_missing_path_is_exit_2() -> None:
    result = validate("no/such.jsonl")
    assert result.exit_code == 2
    assert result.stderr == "error: no such file or directory: no/such.jsonl; check the path\n"


def test_golden_files_are_what_the_generator_makes(tmp_path: Path) -> None:
    """make_golden.py is deterministic, and the committed files are its output."""
    script = GOLDEN / "make_golden.py"
    subprocess.run([sys.executable, str(script), str(tmp_path)], check=True, capture_output=True)
    made = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    kept = sorted(
        p.relative_to(GOLDEN) for p in GOLDEN.rglob("*") if p.is_file() and p.suffix != ".py"
    )
    assert made == kept
    for rel in made:
        new, old = (tmp_path / rel).read_text(), (GOLDEN / rel).read_text()
        if rel.name != "ep_playback.jsonl":  # the header names the package version
            new, old = (_without_producer(text) for text in (new, old))
        assert new == old, f"{rel} changed: run python tests/fixtures/cli/make_golden.py"


def _without_producer(text: str) -> str:
    first, rest = text.split("\n", 1)
    header = json.loads(first)
    header.pop("producer")
    return json.dumps(header) + "\n" + rest


def test_leftover_side_files_of_a_record_run_are_warned_about(tmp_path: Path) -> None:
    path, _ = golden_lines(tmp_path)
    side = tmp_path / "run_a.jsonl.4242.partial"
    side.write_text("")
    result = validate(str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{side}: warning: side file of an interrupted record run")
