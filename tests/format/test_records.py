"""File format v1: pydantic models and the JSON Schema of a line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

import cassette
from cassette.format.check import (
    header_fault,
    header_ok,
    interaction_ok,
    line_faults,
    outcome_ok,
)
from cassette.format.models import LINE_ADAPTER, Header, Interaction, Outcome, json_schema
from cassette.format.runid import derive
from cassette.types import Json


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


_HEADER = {
    "type": "header", "format": "rollout-cassette", "version": 1, "created_at": "t",
    "producer": "p", "meta": {"k": [1]},
}  # fmt: skip
_OUTCOME = {"type": "outcome", "env_index": 3, "reward": 0.5, "terminated": True, "info": {}}


def _variants(line: Json) -> list[Json]:
    """``line``, each key dropped, each value swapped for another kind, and one key more."""
    kinds = [None, True, 1, 1.0, "1", "header", "outcome", "rollout-cassette", [], {}, {"1": 1}]
    out = [line, {**line, "extra": 1}]
    out += [{k: v for k, v in line.items() if k != key} for key in line]
    out += [{**line, key: kind} for key in line for kind in kinds]
    return out


@pytest.mark.parametrize("line", [*_variants(_HEADER), *_variants(_OUTCOME)], ids=repr)
def test_the_hand_checks_pass_only_what_the_models_pass(line: Json) -> None:
    """header_ok/outcome_ok spare a valid line the models (and pydantic's import): what
    they pass the models pass, and the header check finds no fault in it."""
    if header_ok(line) or outcome_ok(line):
        LINE_ADAPTER.validate_python(line, strict=True)
        assert line.get("type") != "header" or header_fault(line) is None


_INTERACTION = {
    "type": "interaction", "env_index": 0, "channel": "llm", "step": 1,
    "delta": {"base": 0, "keep": 1, "same": ["tools"]}, "request": {},
    "request_sha256": "a" * 64, "response": {},
    "error": {"type": "t", "message": "m", "data": {}}, "meta": {"checksum": "0" * 8},
}  # fmt: skip
_NESTED = [
    {**_INTERACTION, part: variant}
    for part in ("delta", "error")
    for variant in _variants(_INTERACTION[part])
]


@pytest.mark.parametrize("line", [*_variants(_INTERACTION), *_NESTED], ids=repr)
def test_the_interaction_check_passes_only_what_the_model_passes(line: Json) -> None:
    """interaction_ok (which replay and validate use) passes only lines the model passes,
    their delta and error included (the line's type is its caller's to check)."""
    if line.get("type") == "interaction" and interaction_ok(line):
        LINE_ADAPTER.validate_python(line, strict=True)


def test_the_hand_checks_pass_a_valid_header_outcome_and_interaction() -> None:
    assert header_ok(_HEADER) and outcome_ok(_OUTCOME) and interaction_ok(_INTERACTION)
    assert line_faults(_HEADER) == line_faults(_OUTCOME) == line_faults(_INTERACTION) == []


def test_replay_opens_without_importing_pydantic(tmp_path: Path) -> None:
    """A valid file's header and outcomes are checked by hand: pydantic (about 9 MB of
    memory and most of a small file's open time) is not imported to read them."""
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record", meta={"who": "test"}) as cas:
        cas.call({"model": "m"}, live=lambda: {"ok": 1})
        cas.outcome(0, reward=1.0, terminated=True, info={"k": "v"})
    code = (
        "import sys, cassette\n"
        f"cas = cassette.open({str(path)!r}, 'replay')\n"
        "assert cas.index.outcomes and cas.call({'model': 'm'}, live=dict) == {'ok': 1}\n"
        "print('pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
