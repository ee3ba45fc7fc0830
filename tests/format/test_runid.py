"""The run id in every header: content-derived (recomputed here by hand from the
documented rule), the same after a copy, a move and an upload to a real S3 API (moto's
server on 127.0.0.1), different for two runs, one for the shards of a ``$CASSETTE_RUN``,
kept by append, merge, export and import."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import cassette
import cassette.storage.recorder as recorder_module
from cassette.cli import main
from cassette.format.runid import set_run_id
from cassette.storage.index import load_index


def _record(path: Path, n: int = 2, mode: str = "record", first: int = 0, **open_args: Any) -> None:
    with cassette.open(path, mode, **open_args) as cas:
        for i in range(first, first + n):
            cas.call(
                {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]},
                live=lambda i=i: {"choices": [{"message": {"content": f"a{i}"}}]},
                env_index=i,
            )
            cas.outcome(i, reward=1.0)


def _header(path: Path) -> dict[str, Any]:
    first = path.read_bytes().split(b"\n", 1)[0]
    header = json.loads(first)
    assert header["type"] == "header"
    return header  # type: ignore[no-any-return]


def _by_hand(header: dict[str, Any]) -> str:
    """The rule as the file format page states it, written out independently."""
    meta = header["meta"]
    if meta.get("run"):
        seed = ("run:" + meta["run"]).encode()
    else:
        fields = [header["created_at"], header["producer"], meta["run_nonce"]]
        seed = b"header:" + json.dumps(fields, separators=(",", ":")).encode()
    return hashlib.sha256(seed).hexdigest()[:16]


def _stats_id(path: str) -> str:
    result = CliRunner().invoke(main, ["stats", path, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["run_id"]  # type: ignore[no-any-return]


def test_every_header_holds_a_run_id_recomputable_from_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path, meta={"task": "x"})
    header = _header(path)
    meta = header["meta"]
    assert meta["task"] == "x" and len(meta["run_nonce"]) == 16
    assert meta["run_id"] == _by_hand(header)
    assert _stats_id(str(path)) == meta["run_id"]
    shown = CliRunner().invoke(main, ["show", str(path)])
    assert shown.stdout.splitlines()[1] == f"run id {meta['run_id']}"
    shown = CliRunner().invoke(main, ["show", str(path), "--format", "json"])
    assert json.loads(shown.stdout)["run_id"] == meta["run_id"]
    stats = CliRunner().invoke(main, ["stats", str(path), "--format", "json"])
    assert json.loads(stats.stdout)["run_id"] == meta["run_id"]
    assert (
        f"run id          {meta['run_id']}" in CliRunner().invoke(main, ["stats", str(path)]).stdout
    )


def test_the_id_survives_copy_and_move(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path)
    run_id = _header(path)["meta"]["run_id"]
    copy = tmp_path / "copies" / "b.jsonl"
    copy.parent.mkdir()
    shutil.copy2(path, copy)
    moved = tmp_path / "moved.jsonl"
    path.rename(moved)
    assert _stats_id(str(copy)) == _stats_id(str(moved)) == run_id


def test_two_runs_differ_even_in_the_same_millisecond(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder_module, "now_iso", lambda: "2026-01-01T00:00:00.000Z")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _record(a)
    _record(b)
    assert _header(a)["created_at"] == _header(b)["created_at"]
    assert _header(a)["meta"]["run_id"] != _header(b)["meta"]["run_id"]
    before = _header(a)["meta"]["run_id"]
    _record(a)  # a re-record is a new run
    assert _header(a)["meta"]["run_id"] != before


def test_shards_sharing_cassette_run_share_one_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = tmp_path / "set"
    shards.mkdir()  # a directory: one shard file a worker
    monkeypatch.setenv("CASSETTE_RUN", "rollout-7")
    for k, name in enumerate(("w0", "w1", "w2")):
        monkeypatch.setenv("CASSETTE_SHARD", name)
        _record(shards, first=10 * k)
    headers = load_index([shards]).headers
    assert len(headers) == 3
    want = hashlib.sha256(b"run:rollout-7").hexdigest()[:16]
    assert {h["meta"]["run_id"] for h in headers} == {want}
    assert "run_nonce" not in headers[0]["meta"]
    assert _stats_id(str(shards)) == want
    # shards of different runs: one id for the set, from their sorted ids
    monkeypatch.setenv("CASSETTE_RUN", "rollout-8")
    monkeypatch.setenv("CASSETTE_SHARD", "w3")
    _record(shards, mode="append", first=30)
    ids = sorted({h["meta"]["run_id"] for h in load_index([shards]).headers})
    assert len(ids) == 2
    mixed = hashlib.sha256(("set:" + ",".join(ids)).encode()).hexdigest()[:16]
    assert _stats_id(str(shards)) == mixed


def test_shards_appended_by_a_runs_workers_share_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = tmp_path / "set"
    shards.mkdir()
    monkeypatch.setenv("CASSETTE_RUN", "rollout-9")
    for k, name in enumerate(("w0", "w1")):  # workers that add to a set, not replace it
        monkeypatch.setenv("CASSETTE_SHARD", name)
        _record(shards, mode="append", first=10 * k)
    headers = load_index([shards]).headers
    want = hashlib.sha256(b"run:rollout-9").hexdigest()[:16]
    assert [h["meta"]["run_id"] for h in headers] == [want, want]
    assert _stats_id(str(shards)) == want


def test_append_keeps_the_first_header_and_its_id(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    _record(path, n=1)
    run_id = _header(path)["meta"]["run_id"]
    _record(path, n=3, mode="append")  # (episode 0 is served; 1 and 2 are recorded)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["type"] for line in lines].count("header") == 1
    assert _stats_id(str(path)) == run_id
    fresh = tmp_path / "new.jsonl"
    _record(fresh, mode="append")  # append to no file starts one, with its own id
    assert _header(fresh)["meta"]["run_id"] == _by_hand(_header(fresh)) != run_id


def test_merge_of_a_runs_shards_keeps_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shards = tmp_path / "set"
    shards.mkdir()  # a directory: one shard file a worker
    monkeypatch.setenv("CASSETTE_RUN", "r")
    for k, name in enumerate(("w0", "w1")):
        monkeypatch.setenv("CASSETTE_SHARD", name)
        _record(shards, first=10 * k)
    out = tmp_path / "all.jsonl"
    result = CliRunner().invoke(main, ["merge", str(out), str(shards)])
    assert result.exit_code == 0, result.output
    assert _header(out)["meta"]["run_id"] == _stats_id(str(shards))


def test_files_written_before_run_ids_keep_their_derived_id(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    _record(path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    del header["meta"]["run_id"], header["meta"]["run_nonce"]
    path.write_text("\n".join([json.dumps(header, separators=(",", ":")), *lines[1:]]) + "\n")
    legacy = set_run_id([header])
    assert len(legacy) == 16 and _stats_id(str(path)) == legacy
    shutil.copy(path, tmp_path / "old-copy.jsonl")
    assert _stats_id(str(tmp_path / "old-copy.jsonl")) == legacy
    pytest.importorskip("pyarrow")
    assert CliRunner().invoke(main, ["export", str(path), str(tmp_path / "ds")]).exit_code == 0
    back = tmp_path / "back.jsonl"
    assert CliRunner().invoke(main, ["import", str(tmp_path / "ds"), str(back)]).exit_code == 0
    assert _header(back)["meta"]["run_id"] == legacy == _stats_id(str(back))


pa = pytest.importorskip("pyarrow")


def test_export_and_import_keep_the_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.jsonl"
    _record(path, n=3)
    run_id = _header(path)["meta"]["run_id"]
    out = tmp_path / "ds"
    result = CliRunner().invoke(main, ["export", str(path), str(out)])
    assert result.exit_code == 0 and result.output.rstrip().endswith(f"run id {run_id}")
    episodes = pa.parquet.read_table(out / "episodes.parquet").to_pydict()
    assert set(episodes["run_id"]) == {run_id}
    assert f"- run id: `{run_id}`" in (out / "README.md").read_text()
    back = tmp_path / "back.jsonl"
    assert CliRunner().invoke(main, ["import", str(out), str(back)]).exit_code == 0
    header = _header(back)
    assert header["meta"]["run_id"] == run_id == _by_hand(header)  # still recomputable
    # a shard set of one run: the imported file keeps the set's id
    shards = tmp_path / "set"
    shards.mkdir()  # a directory: one shard file a worker
    monkeypatch.setenv("CASSETTE_RUN", "r2")
    for k, name in enumerate(("w0", "w1")):
        monkeypatch.setenv("CASSETTE_SHARD", name)
        _record(shards, first=10 * k)
    set_id = _stats_id(str(shards))
    assert CliRunner().invoke(main, ["export", str(shards), str(tmp_path / "ds2")]).exit_code == 0
    back2 = tmp_path / "back2.jsonl"
    assert CliRunner().invoke(main, ["import", str(tmp_path / "ds2"), str(back2)]).exit_code == 0
    assert _stats_id(str(back2)) == set_id


@pytest.fixture(scope="module")
def s3() -> Iterator[Any]:
    pytest.importorskip("s3fs")
    from tests.helpers.s3server import s3_server

    with s3_server() as server:
        yield server


def test_the_id_survives_an_upload_to_s3(s3: Any, tmp_path: Path) -> None:
    import fsspec

    path = tmp_path / "a.jsonl"
    _record(path)
    run_id = _header(path)["meta"]["run_id"]
    fs = fsspec.filesystem("s3")
    url = s3.url("up/a.jsonl")
    fs.put_file(str(path), url)
    assert _stats_id(url) == run_id
    got = tmp_path / "down.jsonl"
    fs.get_file(url, str(got))
    assert _header(got)["meta"]["run_id"] == _by_hand(_header(got)) == run_id
    # a shard set recorded straight into s3:// keeps its run's id
    shards = s3.url("set/")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CASSETTE_RUN", "s3-run")
        for k, name in enumerate(("w0", "w1")):
            mp.setenv("CASSETTE_SHARD", name)
            _record(shards, first=10 * k)  # type: ignore[arg-type]
    assert _stats_id(shards) == hashlib.sha256(b"run:s3-run").hexdigest()[:16]


def test_the_file_format_pages_example_header_holds_its_own_id() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "file-format.md"
    line = next(ln for ln in page.read_text().splitlines() if ln.startswith('{"type":"header"'))
    header = json.loads(line)
    assert header["meta"]["run_id"] == _by_hand(header)
