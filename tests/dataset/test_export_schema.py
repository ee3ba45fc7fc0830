"""The columns of an export are declared once (``export_table.INTERACTIONS`` and
``EPISODES``): the Parquet files ``cassette export`` writes have exactly that schema,
whichever path made the rows (the stream, or the loaded index), with nulls and without,
and a table that strays from the declaration is refused."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.errors import CassetteWarning

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from cassette.dataset.export import export_parquet  # noqa: E402
from cassette.dataset.export_arrays import string_array, text_array  # noqa: E402
from cassette.dataset.export_table import EPISODES, INTERACTIONS, make_table  # noqa: E402


def schema(pa: Any, columns: dict[str, str]) -> Any:
    """The Arrow schema the declaration ``columns`` (name -> pyarrow type factory) stands for."""
    return pa.schema([(name, getattr(pa, typ)()) for name, typ in columns.items()])


def _record(path: Path) -> Path:
    with cassette.open(path, "record") as cas:
        cas.call({"model": "m", "messages": [{"role": "user", "content": "hi"}]}, live=lambda: {})
        cas.call({"q": 2}, live=lambda: {"usage": {"total_tokens": 3}}, env_index="task-1")
        cas.outcome("task-1", reward=1.0, terminated=True)
    return path


def _schemas(out: Path) -> tuple[object, object]:
    return pq.read_schema(out / "interactions.parquet"), pq.read_schema(out / "episodes.parquet")


def test_written_schemas_are_the_declared_ones(tmp_path: Path) -> None:
    src = _record(tmp_path / "a.jsonl")
    export_parquet(src, tmp_path / "streamed")
    damaged = tmp_path / "damaged.jsonl"  # a cut-short last line: warned of, skipped
    damaged.write_bytes(src.read_bytes() + b'{"type": "interac')
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CassetteWarning)
        export_parquet(damaged, tmp_path / "indexed")
    for out in ("streamed", "indexed"):
        interactions, episodes = _schemas(tmp_path / out)
        assert interactions.remove_metadata() == schema(pa, INTERACTIONS), out
        assert episodes.remove_metadata() == schema(pa, EPISODES), out
        assert interactions.names == list(INTERACTIONS) and episodes.names == list(EPISODES)


def test_an_empty_cassette_has_the_same_schemas(tmp_path: Path) -> None:
    src = tmp_path / "empty.jsonl"
    with cassette.open(src, "record"):
        pass
    export_parquet(src, tmp_path / "out")
    interactions, episodes = _schemas(tmp_path / "out")
    assert interactions.remove_metadata() == schema(pa, INTERACTIONS)
    assert episodes.remove_metadata() == schema(pa, EPISODES)


def test_a_table_that_strays_from_the_declaration_is_refused() -> None:
    columns = {"a": "int64", "b": "string"}
    good = make_table(pa, columns, {"a": [1, None], "b": [b"x", None]}, {})
    assert good.schema == schema(pa, columns) and good.to_pylist()[1] == {"a": None, "b": None}
    with pytest.raises(TypeError, match="not the declared"):
        make_table(pa, columns, {"b": [b"x"], "a": [1]}, {})  # another order
    with pytest.raises(TypeError, match="not the declared"):
        make_table(pa, columns, {"a": [1]}, {})  # one missing
    with pytest.raises(TypeError, match="column b is int64, declared string"):
        make_table(pa, columns, {"a": [1], "b": pa.array([1])}, {})


def test_one_string_array_builder() -> None:
    """string_array makes every text column: values cut at their ends, nulls by bits."""
    arr = string_array(pa, b"abcdef", [1, 1, 4, 6], bytearray([0b1101]), 1)
    assert arr.to_pylist() == ["a", None, "bcd", "ef"] and arr.type == pa.string()
    assert text_array(pa, [b"x", None, "é".encode()]).to_pylist() == ["x", None, "é"]
    assert text_array(pa, [None, None]).to_pylist() == [None, None]
