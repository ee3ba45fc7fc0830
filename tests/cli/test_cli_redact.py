"""`cassette redact`: scrub secrets from an existing cassette, atomically."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cassette
from cassette.cli import main

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
KEY = "sk-fakeRedactTestKey0123456789abc"  # planted, not a real key
IN_PROMPT = "sk-fakeInsideThePrompt0123456789"
REQUEST = {
    "model": "m",
    "messages": [{"role": "user", "content": f"my key is {IN_PROMPT}"}],
    "api_key": KEY,
}


def redact(*args: str) -> Result:
    return CliRunner().invoke(main, ["redact", *args])


def leaky(path: Path) -> Path:
    """A cassette recorded with redaction turned off, as older tools would write it."""
    off = cassette.Redactor(keys=(), patterns=())
    with cassette.open(
        path, "record", redact=off, meta={"note": "Bearer abcdefghijklmnop12"}
    ) as cas:
        cas.call(REQUEST, live=lambda: {"choices": [{"message": {"content": "ok"}}]})
        cas.call(
            {**REQUEST, "messages": [*REQUEST["messages"], {"role": "user", "content": "more"}]},
            live=lambda: {"choices": [{"message": {"content": "fine"}}]},
        )
        cas.outcome(0, reward=1.0, info={"password": "hunter2", "session_id": "s-42"})
    return path


def secrets_in(text: str) -> list[str]:
    return [s for s in (KEY, IN_PROMPT, "abcdefghijklmnop12", "hunter2") if s in text]


def test_in_place_scrubs_every_secret_and_keeps_the_hashes(tmp_path: Path) -> None:
    path = leaky(tmp_path / "a.jsonl")
    before = [json.loads(line) for line in path.read_text().splitlines()]
    assert secrets_in(path.read_text())
    result = redact(str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"redacted 4 values in {path} (in place): header 1, interaction 2, outcome 1\n"
    )
    text = path.read_text()
    assert secrets_in(text) == [] and sorted(tmp_path.iterdir()) == [path]  # no side file
    after = [json.loads(line) for line in text.splitlines()]
    assert [x.get("request_sha256") for x in after] == [x.get("request_sha256") for x in before]
    # the second request's api_key is the first's: held once, by delta, and scrubbed there
    assert [x["meta"].get("redacted") for x in after[1:3]] == [2, None]
    assert "api_key" not in after[2]["request"] and after[2]["delta"]["same"] == "*"
    assert after[3]["info"] == {"password": "[REDACTED]", "session_id": "s-42"}
    assert CliRunner().invoke(main, ["validate", str(path)]).exit_code == 0
    # the hash was of the live request: replaying it still matches
    with cassette.open(path, "replay") as cas:
        assert cas.call(REQUEST, live=lambda: {})["choices"][0]["message"]["content"] == "ok"


def test_the_copy_keeps_the_mode_and_never_writes_through_a_planted_name(
    tmp_path: Path,
) -> None:
    path = leaky(tmp_path / "a.jsonl")
    path.chmod(0o640)
    out = tmp_path / "clean.jsonl"
    planted = tmp_path / f"clean.jsonl.{os.getpid()}.redact"  # the name it once used
    planted.write_text("someone else's\n")
    assert redact(str(path), str(out)).exit_code == 0
    assert secrets_in(out.read_text()) == [] and stat.S_IMODE(out.stat().st_mode) == 0o640
    assert planted.read_text() == "someone else's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, out.name, planted.name])


def test_a_second_run_finds_nothing_and_changes_nothing(tmp_path: Path) -> None:
    path = leaky(tmp_path / "a.jsonl")
    assert redact(str(path)).exit_code == 0
    once = path.read_bytes()
    result = redact(str(path))
    assert result.exit_code == 0
    assert result.stdout == f"nothing to redact in {path} (in place)\n"
    assert path.read_bytes() == once


def test_out_leaves_the_input_alone_and_extra_rules_apply(tmp_path: Path) -> None:
    path = leaky(tmp_path / "a.jsonl")
    original = path.read_bytes()
    out = tmp_path / "shared.jsonl"
    result = redact(str(path), str(out), "--key", "session_id", "--pattern", r"s-\d+")
    assert result.exit_code == 0, result.output
    assert f"in {path} into {out}: " in result.stdout
    assert path.read_bytes() == original
    info = json.loads(out.read_text().splitlines()[3])["info"]
    assert info == {"password": "[REDACTED]", "session_id": "[REDACTED]"}


def test_gzip_stays_gzip_and_private_files_stay_private(tmp_path: Path) -> None:
    plain = leaky(tmp_path / "a.jsonl")
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(gzip.compress(plain.read_bytes()))
    os.chmod(path, 0o600)
    assert redact(str(path)).exit_code == 0
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert secrets_in(gzip.decompress(path.read_bytes()).decode()) == []
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_shard_directory_is_redacted_shard_by_shard(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    shutil.copytree(GOLDEN / "shards", shards)
    leaky(shards / "w2.jsonl")
    result = redact(str(shards))
    assert result.exit_code == 0, result.output
    assert secrets_in((shards / "w2.jsonl").read_text()) == []
    assert (shards / "w0.jsonl").read_bytes() == (GOLDEN / "shards" / "w0.jsonl").read_bytes()


def test_a_bad_file_is_left_untouched(tmp_path: Path) -> None:
    path = leaky(tmp_path / "a.jsonl")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join([lines[0], "{broken\n", *lines[1:]]))
    before = path.read_bytes()
    result = redact(str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {path}:2: not valid JSON")
    assert result.stderr.count("\n") == 1
    assert path.read_bytes() == before and not list(tmp_path.glob("*.redact"))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["missing.jsonl"], "error: no such file or directory: missing.jsonl"),
        (
            [str(GOLDEN / "run_a.jsonl"), "--pattern", "(unclosed"],
            "error: --pattern '(unclosed' is not a",
        ),
    ],
)
def test_usage_errors_exit_2(args: list[str], says: str) -> None:
    result = redact(*args)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert result.stderr.startswith(says)


def test_an_existing_out_is_overwritten_only_with_force(tmp_path: Path) -> None:
    path = leaky(tmp_path / "a.jsonl")
    out = tmp_path / "mine.jsonl"
    out.write_text("a file of yours\n")
    refused = redact(str(path), str(out))
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"error: {out} exists; pass --force to overwrite it,")
    assert out.read_text() == "a file of yours\n"
    forced = redact(str(path), str(out), "--force")  # as it says
    assert forced.exit_code == 0, forced.output
    assert "[REDACTED]" in out.read_text()
