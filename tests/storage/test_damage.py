"""Damage stays local: a key recorded twice, a broken delta chain, a response changed on
disk (meta.checksum). Each test fails on a reader that makes the whole file unreadable or
serves a changed response silently."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.dataset.validate import validate

Json = dict[str, Any]


def _answer(env: Any, step: int) -> Json:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"{env}/{step}"}}]}


def _request(env: Any, step: int) -> Json:
    messages: list[Json] = [{"role": "user", "content": f"task {env}"}]
    for k in range(step):
        messages += [_answer(env, k)["choices"][0]["message"], {"role": "user", "content": "on"}]
    return {"model": "m", "messages": messages}


def _record(cas: cassette.Cassette, env: Any, steps: range) -> None:
    for step in steps:
        cas.call(_request(env, step), live=lambda e=env, s=step: _answer(e, s), env_index=env)


def _no_live() -> Json:
    raise AssertionError("replay called live")


def _replay(path: Path, env: Any, step: int, **kw: Any) -> Json:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cassette.CassetteWarning)
        with cassette.open(path, "replay", **kw) as cas:
            return cas.call(_request(env, step), live=_no_live, env_index=env, step=step)


def _lines(path: Path) -> list[Json]:
    return [orjson.loads(x) for x in path.read_bytes().splitlines()]


def _write(path: Path, lines: list[Json]) -> None:
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))


# --- a key recorded twice --------------------------------------------------------------


def test_two_appenders_of_one_episode_leave_a_readable_file(tmp_path: Path) -> None:
    """Two processes appended the same episode (interleaved lines, each writer's deltas
    against its own earlier lines): every key is served (the first line of it), with one
    warning naming the lines; the other episode replays."""
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        _record(cas, 1, range(3))
    a, b = cassette.open(path, "append"), cassette.open(path, "append")
    for step in range(3):  # A0 B0 A1 B1 A2 B2
        for cas in (a, b):
            cas.call(_request(0, step), live=lambda s=step: _answer(0, s), env_index=0)
    a.close()
    b.close()
    with pytest.warns(cassette.CassetteWarning, match=r"3 keys recorded twice.*lines \d+ and"):
        cas = cassette.open(path, "replay")
    with cas:
        for env in (0, 1):
            for step in range(3):
                assert cas.call(_request(env, step), live=_no_live, env_index=env) == _answer(
                    env, step
                )
        for entry in cas.index.entries.values():
            assert entry.full_request() == _request(entry.env_index, entry.step)
        for entry, full in cas.index.iter_full():
            assert full == _request(entry.env_index, entry.step)
        assert len(list(cas.index.iter_full())) == 6


def test_merge_first_repairs_a_file_with_repeated_keys(tmp_path: Path) -> None:
    path, out = tmp_path / "run.jsonl", tmp_path / "fixed.jsonl"
    with cassette.open(path, "record") as cas:
        _record(cas, 0, range(3))
    lines = _lines(path)
    _write(path, [*lines, lines[2]])  # step 1 again, at the end
    runner = CliRunner()
    refused = runner.invoke(main, ["merge", str(out), str(path)])
    assert refused.exit_code == 2
    assert "recorded twice" in refused.output and "--on-conflict first" in refused.output
    fixed = runner.invoke(main, ["merge", str(out), str(path), "--on-conflict", "first"])
    assert fixed.exit_code == 0, fixed.output
    assert "left out 1 repeated line" in fixed.output
    assert validate(out).ok
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for step in range(3):
            assert _replay(out, 0, step) == _answer(0, step)


def test_repeats_across_shards_name_the_merge_of_the_directory(tmp_path: Path) -> None:
    """Two runs' files in one directory: the fix merges the directory (the cassette that was
    opened), not the one shard the warning is about, whose copy keeps every repeat."""
    shards = tmp_path / "runs"
    for name in ("a.jsonl", "b.jsonl"):
        with cassette.open(shards / name, "record") as cas:
            _record(cas, 0, range(2))
    with pytest.warns(cassette.CassetteWarning) as caught:
        cassette.open(f"{shards}/", "replay").close()
    (message,) = [str(w.message) for w in caught]
    assert f"`cassette merge OUT {shards}/ --on-conflict first` writes a copy" in message
    out = tmp_path / "fixed.jsonl"
    fixed = CliRunner().invoke(main, ["merge", str(out), f"{shards}/", "--on-conflict", "first"])
    assert fixed.exit_code == 0, fixed.output
    assert "left out 2 repeated lines" in fixed.output and validate(out).ok


# --- a broken delta chain --------------------------------------------------------------


def test_a_broken_delta_chain_spoils_only_the_steps_built_on_it(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        _record(cas, 0, range(4))
        _record(cas, 1, range(4))
    lines = _lines(path)
    assert lines[3]["env_index"] == 0 and lines[3]["step"] == 2 and "delta" in lines[3]
    del lines[2]  # episode 0, step 1: steps 2 and 3 were deltas on it
    _write(path, lines)
    with pytest.warns(cassette.CassetteWarning, match=r"broken delta chain.*lines 3, 4"):
        cassette.open(path, "replay").close()
    assert _replay(path, 0, 0) == _answer(0, 0)
    for step in range(4):
        assert _replay(path, 1, step) == _answer(1, step)
    for step, line in ((2, 3), (3, 4)):
        with pytest.raises(cassette.CassetteFormatError, match=rf"run.jsonl:{line}: .*delta"):
            _replay(path, 0, step)
        with pytest.raises(cassette.CassetteFormatError, match=rf"run.jsonl:{line}: "):
            _replay(path, 0, step, match="key")
    # show and stats read the rest; merge writes a valid file without the two lines
    runner = CliRunner()
    shown = runner.invoke(main, ["show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert "task 1" in shown.output
    merged = runner.invoke(main, ["merge", str(tmp_path / "m.jsonl"), str(path)])
    assert merged.exit_code == 0, merged.output
    assert merged.output.count("left out") == 2
    assert validate(tmp_path / "m.jsonl").ok


def test_delta_same_must_name_keys(tmp_path: Path) -> None:
    """``delta.same=[[1]]`` is a format error of that line, not an unhashable-list crash."""
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        _record(cas, 0, range(2))
    lines = _lines(path)
    lines[2]["delta"]["same"] = [[1]]
    _write(path, lines)
    with pytest.raises(cassette.CassetteFormatError, match=r"run\.jsonl:3"):
        cassette.open(path, "replay")


# --- a changed response ----------------------------------------------------------------


def test_a_changed_response_is_refused_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        _record(cas, 0, range(3))
    raw = path.read_bytes()
    assert raw.count(b'"checksum":"') == 3
    path.write_bytes(raw.replace(b'"content":"0/1"}}]}', b'"content":"0/7"}}]}', 1))
    assert _replay(path, 0, 0) == _answer(0, 0)
    assert _replay(path, 0, 2) == _answer(0, 2)
    with pytest.raises(cassette.CassetteFormatError, match=r"run.jsonl:3: .*not what was recorded"):
        _replay(path, 0, 1)
    report = validate(path)
    # line 4 refers to the changed answer as its base message: its request no longer hashes
    assert [(f.line, f.message[:24]) for f in report.faults] == [
        (3, "the response or error is"),
        (4, "request_sha256 does not "),
    ]


def test_files_without_a_checksum_still_read(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        _record(cas, 0, range(3))
    lines = _lines(path)
    for line in lines:
        line.get("meta", {}).pop("checksum", None)
    _write(path, lines)
    assert validate(path).ok
    for step in range(3):
        assert _replay(path, 0, step) == _answer(0, step)


def test_redact_keeps_the_checksum_true(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    secret = "sk-proj-" + "A1b2C3d4E5" * 4
    with cassette.open(
        path, "record", redact=cassette.Redactor(extra_patterns=[r"zzz-never"])
    ) as cas:
        cas.call({"q": 1}, live=lambda: {"text": "plain"}, env_index=0)
    lines = _lines(path)
    lines[1]["response"]["text"] = f"key {secret}"
    lines[1]["meta"]["checksum"] = cassette.format.checksum.checksum(lines[1]["response"], None)
    _write(path, lines)
    result = CliRunner().invoke(main, ["redact", str(path)])
    assert result.exit_code == 0, result.output
    assert secret.encode() not in path.read_bytes()
    assert validate(path).ok
    with cassette.open(path, "replay") as cas:
        assert "[REDACTED]" in cas.call({"q": 1}, live=_no_live, env_index=0)["text"]


# --- a file that is not a cassette -------------------------------------------------------


def test_a_binary_file_without_a_newline_is_not_read_as_a_crash_cut_line(tmp_path: Path) -> None:
    """Only the beginning of a record (``{``) with no newline is a line a crash cut short
    (skipped with a warning); a binary file's bytes are not a cassette of 0 episodes."""
    png = tmp_path / "picture.jsonl"
    png.write_bytes(b"\x89PNG\r\x1a\x00\x00\x00\rIHDR\x00\x00")
    with pytest.raises(cassette.CassetteFormatError, match=r"picture\.jsonl:1: not valid JSON"):
        cassette.open(png, "replay")
    result = CliRunner().invoke(main, ["stats", str(png)])
    assert result.exit_code != 0 and "not valid JSON" in result.output
    cut = tmp_path / "cut.jsonl"
    with cassette.open(cut, "record") as cas:
        _record(cas, 0, range(2))
    cut.write_bytes(cut.read_bytes() + b'{"type":"interaction","env_index":0,"ch')
    with pytest.warns(cassette.CassetteWarning, match="last line is cut short"):
        cas = cassette.open(cut, "replay")
    assert cas.call(_request(0, 1), live=_no_live, env_index=0, step=1) == _answer(0, 1)
