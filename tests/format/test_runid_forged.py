"""Run ids that are not ids: a header whose ``meta.run_id`` is a number, a list, empty, a
line break with terminal escapes, or a megabyte of text (edited by hand, forged, or given
to ``cassette.open(meta=...)``). The recorder derives an id in its place; readers name
such a header as one without an id, so nothing of it reaches show, stats, the export's
table and dataset card, merge or import, and a shard set mixing such headers with good
and legacy ones gets one id from every command. Nothing crashes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.format.runid import derive, set_run_id

ID = re.compile(r"[0-9a-f]{16}")
EVIL = "evil\n---\x1b[31mRED`"
FORGED: list[Any] = [5, ["a"], "", None, EVIL, "x" * 1_000_000, {"a": 1}, "a b"]


def _header(meta: dict[str, Any], created: str = "2026-12-01T00:00:00.000Z") -> bytes:
    line = {"type": "header", "format": "rollout-cassette", "version": 1,
            "created_at": created, "producer": "rollout-cassette/0.1.0", "meta": meta}  # fmt: skip
    return orjson.dumps(line) + b"\n"


def _interaction(env: int) -> bytes:
    line = {"type": "interaction", "env_index": env, "channel": "llm", "step": 0,
            "request": {"q": env}, "request_sha256": "0" * 64, "response": {"a": env},
            "meta": {}}  # fmt: skip
    return orjson.dumps(line) + b"\n"


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_the_recorder_derives_an_id_in_place_of_one_that_is_not(tmp_path: Path) -> None:
    for i, forged in enumerate(FORGED):
        path = tmp_path / f"r{i}.jsonl"
        with cassette.open(path, "record", meta={"run_id": forged}) as cas:
            cas.call({"q": 1}, live=lambda: {"a": 1})
        header = orjson.loads(path.read_bytes().split(b"\n", 1)[0])
        assert ID.fullmatch(header["meta"]["run_id"]) and header["meta"]["run_id"] == derive(
            {**header, "meta": {k: v for k, v in header["meta"].items() if k != "run_id"}}
        )
    with cassette.open(tmp_path / "kept.jsonl", "record", meta={"run_id": "exp-42:a.b_c"}):
        pass  # an id given on purpose is kept
    assert b'"run_id":"exp-42:a.b_c"' in (tmp_path / "kept.jsonl").read_bytes()


@pytest.mark.parametrize("forged", FORGED, ids=lambda v: type(v).__name__ + str(len(str(v))))
def test_a_forged_run_id_reaches_no_report(tmp_path: Path, forged: Any) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(_header({"run_nonce": "0" * 16, "run_id": forged}) + _interaction(0))
    want = set_run_id([orjson.loads(path.read_bytes().split(b"\n", 1)[0])])
    assert ID.fullmatch(want)
    shown = _cli("show", str(path))
    assert f"run id {want}" in shown and "evil" not in shown and "xxxx" not in shown
    stats = json.loads(_cli("stats", str(path), "--format", "json"))
    assert stats["run_id"] == want
    pytest.importorskip("pyarrow")
    said = _cli("export", str(path), str(tmp_path / "ds"))
    assert said.rstrip().endswith(f"run id {want}")
    card = (tmp_path / "ds" / "README.md").read_text()
    assert f"- run id: `{want}`" in card and "\x1b" not in card
    _cli("import", str(tmp_path / "ds"), str(tmp_path / "back.jsonl"))
    assert (
        json.loads(_cli("stats", str(tmp_path / "back.jsonl"), "--format", "json"))["run_id"]
        == want
    )


def test_a_set_mixing_forged_good_and_legacy_headers_has_one_id(tmp_path: Path) -> None:
    shards = tmp_path / "set"
    shards.mkdir()
    metas: list[dict[str, Any]] = [
        {"run_id": forged, "run_nonce": "1" * 16} for forged in FORGED
    ] + [{"run_id": "0123456789abcdef"}, {}, {"run": 7}, {"run": ""}]
    for i, meta in enumerate(metas):
        (shards / f"s{i}.jsonl").write_bytes(_header(meta, f"2026-12-01T00:00:0{i % 10}Z") +
                                             _interaction(i))  # fmt: skip
    ids = {json.loads(_cli("stats", str(shards), "--format", "json"))["run_id"]}
    _cli("merge", str(tmp_path / "m.jsonl"), str(shards))
    ids.add(json.loads(_cli("stats", str(tmp_path / "m.jsonl"), "--format", "json"))["run_id"])
    pytest.importorskip("pyarrow")
    ids.add(_cli("export", str(shards), str(tmp_path / "ds")).rsplit("run id ", 1)[1].strip())
    _cli("import", str(tmp_path / "ds"), str(tmp_path / "back.jsonl"))
    ids.add(json.loads(_cli("stats", str(tmp_path / "back.jsonl"), "--format", "json"))["run_id"])
    assert len(ids) == 1 and ID.fullmatch(ids.pop())


def test_set_run_id_takes_headers_whose_meta_is_not_an_object() -> None:
    for meta in ([1], "x", 5, None):
        assert ID.fullmatch(set_run_id([{"meta": meta}, {"meta": {"run": "r"}}]))
