"""File format v1: pydantic models and the JSON Schema of a line."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

import cassette
from cassette.format.models import LINE_ADAPTER, Header, Interaction, Outcome, json_schema
from cassette.format.runid import derive


def test_schema_covers_the_three_line_types_and_documents_the_delta() -> None:
    schema = json_schema()
    text = orjson.dumps(schema).decode()
    for name in ("Header", "Interaction", "Outcome", "Delta"):
        assert name in schema["$defs"]
    assert "$ref" in schema["$defs"]["Delta"]["description"]
    assert "keep" in schema["$defs"]["Delta"]["properties"]
    assert "request_sha256" in text


def test_models_forbid_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        Outcome(env_index=0, reward=1.0, surprise=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Header(created_at="x", producer="p", version=2)  # type: ignore[arg-type]


def test_every_recorded_line_validates(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record", meta={"who": "test"}) as cas:
        cas.call(
            {"model": "m", "messages": [{"role": "user", "content": "x"}]}, live=lambda: {"ok": 1}
        )
        cas.call(
            {
                "model": "m",
                "messages": [{"role": "user", "content": "x"}, {"role": "user", "content": "y"}],
            },
            live=lambda: {"ok": 2},
        )
        with pytest.raises(ZeroDivisionError):
            cas.call({"q": 1}, live=lambda: 1 // 0, channel="tool")
        cas.outcome(0, reward=0.5, terminated=True, info={"k": "v"})
    lines = [LINE_ADAPTER.validate_json(raw) for raw in path.read_bytes().splitlines()]
    assert isinstance(lines[0], Header)
    meta = dict(lines[0].meta)
    assert meta.pop("run_id") == derive(lines[0].model_dump()) and meta.pop("run_nonce")
    assert meta == {"who": "test"}
    assert lines[0].producer == f"rollout-cassette/{cassette.__version__}"
    inter = [x for x in lines if isinstance(x, Interaction)]
    assert [x.step for x in inter] == [0, 1, 0]
    assert inter[1].delta is not None and inter[1].delta.keep == 1
    assert inter[2].error is not None and inter[2].error.type == "builtins.ZeroDivisionError"
    assert isinstance(lines[-1], Outcome) and lines[-1].reward == 0.5


def test_schema_documents_the_checksum_and_the_damage_policy() -> None:
    schema = json_schema()
    meta = schema["$defs"]["Interaction"]["properties"]["meta"]["description"]
    assert "checksum" in meta and "[response, error]" in meta
    assert "recorded twice" in schema["$defs"]["Interaction"]["description"]
    assert "broken" not in meta and "unusable" in schema["$defs"]["Delta"]["description"]
    for refused in ("NaN", "not UTF-8", "a set", "beyond 64 bits", "254 levels"):
        assert refused in schema["description"]
