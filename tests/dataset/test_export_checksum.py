"""A response damaged on disk is never laundered by `cassette export` + `cassette import`
into a cassette that serves it: the export leaves out a line whose ``meta.checksum`` does
not match (warning, naming it), the import refuses a row whose response no longer matches
its checksum, and the Parquet pages carry CRCs the import verifies."""

from __future__ import annotations

import random
import warnings
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.dataset.export import export_parquet, import_parquet
from cassette.errors import CassetteError, CassetteWarning

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
STREAM = {"model": "m", "messages": [{"role": "user", "content": "yo"}]}
OTHER = {"model": "m", "messages": [{"role": "user", "content": "other"}]}


def _answer(text: str) -> dict[str, Any]:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


def _record(path: Path) -> None:
    with cassette.open(path, "record") as cas:
        cas.call(ASK, live=lambda: _answer("GOOD answer"))
        chunks = [{"choices": [{"delta": {"content": "GOOD"}}]}]
        list(cas.stream(STREAM, live=lambda: iter(chunks)))
        cas.call(OTHER, live=lambda: _answer("fine"), env_index=1)


def _replayed(path: Path) -> dict[str, Any]:
    """What replay serves for each of the three calls (a CassetteError's class name
    where it refuses)."""
    got: dict[str, Any] = {}
    with cassette.open(path, "replay") as cas:
        for name, run in (
            ("ask", lambda: cas.call(ASK, live=_no_live)),
            ("stream", lambda: list(cas.stream(STREAM, live=_no_live))),
            ("other", lambda: cas.call(OTHER, live=_no_live, env_index=1)),
        ):
            try:
                got[name] = run()
            except CassetteError as exc:
                got[name] = type(exc).__name__
    return got


def _no_live() -> Any:
    raise AssertionError("replay called live")


@pytest.mark.parametrize("repeat", [False, True], ids=["streamed", "index"])
def test_export_leaves_out_a_response_changed_on_disk(tmp_path: Path, repeat: bool) -> None:
    path = tmp_path / "run.jsonl"
    _record(path)
    lines = path.read_bytes().splitlines(keepends=True)
    damaged = [line.replace(b"GOOD", b"EVIL") for line in lines]
    if repeat:  # a key recorded twice: the export reads the loaded index instead
        damaged.append(lines[3])
    path.write_bytes(b"".join(damaged))
    with pytest.warns(CassetteWarning) as caught:
        done = export_parquet(path, tmp_path / "ds")
    said = [str(w.message) for w in caught]
    assert any(f"{path}:2: left out of the export" in s for s in said), said
    assert any(f"{path}:3: left out of the export" in s for s in said), said
    assert done.interactions == 1
    import_parquet(tmp_path / "ds", tmp_path / "back.jsonl")
    assert b"EVIL" not in (tmp_path / "back.jsonl").read_bytes()
    assert _replayed(tmp_path / "back.jsonl") == {
        "ask": "CassetteMiss",
        "stream": "CassetteMiss",
        "other": _answer("fine"),
    }


@pytest.mark.parametrize("column", ["response", "stream_chunks"])
def test_import_refuses_a_row_whose_response_was_changed(tmp_path: Path, column: str) -> None:
    _record(tmp_path / "run.jsonl")
    export_parquet(tmp_path / "run.jsonl", tmp_path / "ds")
    table = pq.read_table(tmp_path / "ds" / "interactions.parquet")
    values = [None if v is None else v.replace("GOOD", "EVIL") for v in table[column].to_pylist()]
    at = table.column_names.index(column)
    table = table.set_column(at, column, pa.array(values, pa.string()))
    pq.write_table(table, tmp_path / "ds" / "interactions.parquet")
    row = 0 if column == "response" else 1
    with pytest.raises(CassetteError, match=f"row {row}: response or error is not what was"):
        import_parquet(tmp_path / "ds", tmp_path / "back.jsonl")
    assert not (tmp_path / "back.jsonl").exists()


def test_an_untouched_export_imports_with_its_checksums(tmp_path: Path) -> None:
    _record(tmp_path / "run.jsonl")
    want = _replayed(tmp_path / "run.jsonl")
    export_parquet(tmp_path / "run.jsonl", tmp_path / "ds")
    import_parquet(tmp_path / "ds", tmp_path / "back.jsonl")
    assert _replayed(tmp_path / "back.jsonl") == want


def test_flipped_bits_in_a_table_never_import_as_other_data(tmp_path: Path) -> None:
    _record(tmp_path / "run.jsonl")
    want = _replayed(tmp_path / "run.jsonl")
    export_parquet(tmp_path / "run.jsonl", tmp_path / "ds")
    good = (tmp_path / "ds" / "interactions.parquet").read_bytes()
    rnd = random.Random(3)
    served = 0
    for i in range(120):
        data = bytearray(good)
        data[rnd.randrange(4, len(data) - 8)] ^= 1 << rnd.randrange(8)
        (tmp_path / "ds" / "interactions.parquet").write_bytes(bytes(data))
        out = tmp_path / f"back{i}.jsonl"
        try:
            import_parquet(tmp_path / "ds", out)
        except CassetteError:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = _replayed(out)
        # a flip the import let through changed nothing it serves, or is refused there
        assert all(got[k] in (want[k], "CassetteMismatch", "CassetteMiss") for k in want), got
        served += got == want
    assert served  # (some flips hit bytes no reader uses)
