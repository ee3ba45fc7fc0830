"""litellm's Responses API streams and secrets: a reply whose text, and a tool call whose
arguments, hold a secret of every kind the redactor knows, streamed one word an event by
the real litellm (its native SSE stream and the stream it fakes from one reply) over real
HTTP to the scripted server, so most secrets are split across two or more delta events.
No secret reaches the file, plain or ``.gz``; replay (offline) yields as many events, of
the same types, with the secrets scrubbed."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

import gzip
import json
from pathlib import Path
from typing import Any

import litellm
import pytest

import cassette
from cassette.adapters.litellm import patch_litellm
from cassette.redact import REDACTED
from tests.helpers.chat import MakeServer
from tests.helpers.fake_secrets import by_kind
from tests.helpers.litellm_calls import KEY, args

pytestmark = pytest.mark.usefixtures("litellm_leftovers")

NATIVE = "openai/gpt-4o-mini"  # litellm streams it natively (SSE)
KINDS = by_kind()
SAMPLES = [KINDS[kind][0] for kind in sorted(KINDS)]
BLOCK = " ".join(s.text for s in SAMPLES)
PASSWORD = KINDS["json_argument"][1].secrets[0]
TOOLS = [{"type": "function", "name": "save", "parameters": {}}]


def _leaks(data: bytes) -> list[str]:
    return [s for sample in SAMPLES for s in sample.secrets if s.encode() in data]


def _calls(base: str) -> list[list[Any]]:
    out = []
    for model in (NATIVE, "openai/scripted"):
        text = litellm.responses(input="go", stream=True, **args(base, model=model))
        tool = litellm.responses(input="go", stream=True, tools=TOOLS, **args(base, model=model))
        out += [list(text), list(tool)]
    return out


@pytest.mark.parametrize("name", ["run.jsonl", "run.jsonl.gz"])
def test_secrets_split_across_response_events_never_reach_the_file(
    make_server: MakeServer, tmp_path: Path, name: str, request: pytest.FixtureRequest
) -> None:
    server = make_server("script", chunk_words=1)
    tool = {"name": "save", "arguments": json.dumps({"password": PASSWORD, "notes": BLOCK})}
    server.enqueue(*[{"content": BLOCK}, {"tool_calls": [tool]}] * 2)
    path = tmp_path / name
    with cassette.open(path, "record") as cas, patch_litellm(cas):
        live = _calls(server.base_url)
    deltas = [e.delta for e in live[0] if e.type == "response.output_text.delta"]
    assert "".join(deltas) == BLOCK and len(deltas) > len(SAMPLES)  # split, and live whole
    raw = path.read_bytes()
    raw = gzip.decompress(raw) if name.endswith(".gz") else raw
    assert _leaks(raw) == [] and KEY.encode() not in raw
    assert PASSWORD.encode() not in raw
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    with cassette.open(path, "replay") as cas, patch_litellm(cas) as patch:
        replayed = _calls(base)
    assert patch.live_calls == 0
    assert [[e.type for e in r] for r in replayed] == [[e.type for e in r] for r in live]
    dumped = " ".join(e.model_dump_json() for r in replayed for e in r).encode()
    assert _leaks(dumped) == []
    args_back = "".join(
        e.delta for e in replayed[1] if e.type == "response.function_call_arguments.delta"
    )
    assert json.loads(args_back)["password"] == REDACTED
