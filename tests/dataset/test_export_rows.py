"""The interactions table of ``cassette export`` holds, row for row, what the index
rebuilds (``Index.iter_full``): the export assembles full requests from bytes, so here
every shape of delta is checked against the plain rebuild (changed and dropped
parameters, ``input`` lists, literal messages that look like references, requests
without messages, streams, errors, a broken chain, keys recorded twice)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette.errors import CassetteWarning
from cassette.storage.index import load_index

pa = pytest.importorskip("pyarrow")

from cassette.dataset.export import export_parquet  # noqa: E402
from cassette.dataset.export_table import interaction_rows  # noqa: E402

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _rows(out: Path) -> list[dict[str, Any]]:
    table = pa.parquet.read_table(out / "interactions.parquet")
    return sorted(table.to_pylist(), key=lambda r: r["seq"])


def _assert_rows_match(src: Path, out: Path) -> int:
    """The export of ``src`` holds what the index rebuilds; the rows of a lean index
    (bytes) are those of an eager one (parsed lines)."""
    with warnings.catch_warnings():  # (a damaged file's are checked by the caller)
        warnings.simplefilter("ignore", CassetteWarning)
        export_parquet(src, out)
        index = load_index([src])
        expected = list(index.iter_full())
        by_index = interaction_rows(load_index([src]))
        by_lean = interaction_rows(load_index([src], lean=True))
    assert by_lean.table(pa, {}).equals(by_index.table(pa, {}))
    assert by_lean.episodes() == by_index.episodes() == index.episodes()
    assert by_lean.outcomes == by_index.outcomes and by_lean.headers == index.headers
    assert by_lean.steps == by_index.steps
    rows = _rows(out)
    assert len(rows) == len(expected)
    for row, (entry, full) in zip(rows, expected, strict=True):
        assert json.loads(row["request"]) == full, (src, entry.key)
        assert list(json.loads(row["request"])) == list(full) or entry.delta is not None
        response = entry.response
        if response is not None and "chunks" in response:
            assert json.loads(row["stream_chunks"]) == response["chunks"]
            response = {k: v for k, v in response.items() if k != "chunks"}
        else:
            assert row["stream_chunks"] is None
        assert (None if row["response"] is None else json.loads(row["response"])) == response
        assert (None if row["error"] is None else json.loads(row["error"])) == entry.error
        assert json.loads(row["meta"]) == entry.meta
        assert (row["env_index"], json.loads(row["env_index_json"])) == (
            str(entry.env_index),
            entry.env_index,
        )
        assert (row["channel"], row["step"], row["request_sha256"]) == (
            entry.channel,
            entry.step,
            entry.sha,
        )
        model = full.get("model")
        assert row["model"] == (model if isinstance(model, str) else None)
    return len(rows)


@pytest.mark.parametrize(
    "name", ["cli/run_a.jsonl", "cli/run_b.jsonl", "cli/shards", "diff/run_b.jsonl"]
)
def test_golden_cassettes_export_as_the_index_rebuilds_them(name: str, tmp_path: Path) -> None:
    assert _assert_rows_match(FIXTURES / name, tmp_path / "ds") > 0


def _answer(text: str) -> Any:
    return lambda: {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def test_every_delta_shape_exports_as_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "shapes.jsonl"
    tools = [{"type": "function", "function": {"name": "t", "parameters": {}}}]
    with cassette.open(path, "record") as cas:
        messages: list[Any] = [{"role": "user", "content": "hi"}]
        params: list[dict[str, Any]] = [
            {"temperature": 0.0, "tools": tools},
            {"temperature": 0.0, "tools": tools},  # only the messages change
            {"temperature": 0.7, "tools": tools},  # a parameter changes
            {"tools": tools},  # a parameter is dropped
            {"tools": tools, "max_tokens": 5},  # one is added
            {"max_tokens": 5},
        ]
        for i, extra in enumerate(params):
            request = {"messages": list(messages), "model": "m", **extra}
            got = cas.call(request, live=_answer(f"a{i}"), env_index=0)
            messages.append(got["choices"][0]["message"])
            messages.append({"$ref": ["choices", 0, "message"]})  # a literal, not a ref
            messages.append({"role": "user", "content": f"more {i}"})
        items: list[Any] = [{"role": "user", "content": "x"}]
        for i in range(3):  # a Responses-style ``input`` list
            cas.call({"model": "r", "input": list(items)}, live=lambda: {"output": []}, env_index=1)
            items.append({"type": "message", "role": "user", "content": f"y{i}"})
        for i in range(2):  # no message list at all
            cas.call({"method": "tools/call", "n": i}, live=lambda: {"ok": True}, env_index=1)
        chunks = [{"choices": [{"delta": {"content": "s"}}]}]
        list(cas.stream({"model": "m", "messages": messages[:1]}, live=lambda: iter(chunks)))
    text = path.read_text()
    assert '"same":["' in text or '"same":[' in text  # a dropped key was written as a list
    assert '"$lit"' in text and '"field":"input"' in text
    assert _assert_rows_match(path, tmp_path / "ds") == 6 + 3 + 2 + 1


def test_a_broken_chain_and_a_repeated_key_are_treated_as_the_index_treats_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas:
        for env in (0, 1):
            messages: list[Any] = [{"role": "user", "content": f"go {env}"}]
            for step in range(3):
                request = {"model": "m", "messages": list(messages)}
                got = cas.call(request, live=_answer(f"{env}.{step}"), env_index=env)
                messages += [got["choices"][0]["message"], {"role": "user", "content": "more"}]
    lines = path.read_text().splitlines()
    lost = next(ln for ln in lines if '"env_index":0,' in ln and '"step":1,' in ln)
    repeat = next(ln for ln in lines if '"env_index":1,' in ln and '"step":0,' in ln)
    kept = [ln for ln in lines if ln != lost]  # episode 0 loses step 1: step 2 is unusable
    path.write_text("\n".join([*kept, repeat]) + "\n")
    with pytest.warns(CassetteWarning):
        done = export_parquet(path, tmp_path / "ds")
    assert done.interactions == 4  # env 0 step 0, env 1 steps 0-2
    assert _assert_rows_match(path, tmp_path / "ds2") == 4
    # a reference that points nowhere: that step and the next are left out, warned about
    text = path.read_text()
    bad = next(ln for ln in text.splitlines() if '"env_index":1,' in ln and '"step":1,' in ln)
    assert '"$ref":["choices",0,"message"]' in bad
    path.write_text(text.replace(bad, bad.replace('["choices",0,"message"]', '["choices",7]')))
    with pytest.warns(CassetteWarning) as said:
        done = export_parquet(path, tmp_path / "ds3")
    assert any("left out, its request cannot be rebuilt" in str(w.message) for w in said)
    assert done.interactions == 2
    assert _assert_rows_match(path, tmp_path / "ds4") == 2
