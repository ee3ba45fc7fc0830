"""patch_litellm and litellm's entry points it does not record (embedding, text_completion,
responses, ...): inside the block each raises a CassetteError naming it, in every mode, and
reaches no server; leaving the block restores them. Real litellm over real HTTP."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

import asyncio
import socket
from pathlib import Path
from typing import Any

import litellm
import litellm.main
import pytest
from litellm import embedding as held_embedding

import cassette
from cassette import CassetteError
from cassette.adapters._litellm_blocked import UNRECORDED
from cassette.adapters.litellm import patch_litellm
from tests.adapters.test_litellm import litellm_leftovers  # noqa: F401 - autouse cleanup
from tests.conftest import MakeServer

KEY = "fake-key-0123456789abcdef"
MODES = ("record", "auto", "append", "passthrough", "replay")


def where(base: str) -> dict[str, Any]:
    return {"api_base": base, "api_key": KEY, "num_retries": 0, "max_retries": 0}


def guard(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """A socket guard from now on: every connection attempt fails and is listed."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any, *args: Any) -> Any:
        attempts.append(address)
        raise AssertionError(f"tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


def recorded(path: Path, base: str) -> None:
    """A cassette holding one litellm completion, for the modes that read one."""
    with cassette.open(path, "record") as cas, patch_litellm(cas), cassette.episode(0):
        messages = [{"role": "user", "content": "hi"}]
        litellm.completion(model="openai/scripted", messages=messages, **where(base))


@pytest.mark.parametrize("mode", MODES)
def test_unrecorded_entry_points_raise_in_every_mode(
    mode: str, tmp_path: Path, make_server: MakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server("random")
    path = tmp_path / "run.jsonl"
    recorded(path, server.base_url)
    attempts = guard(monkeypatch)
    with cassette.open(path, mode) as cas, patch_litellm(cas), cassette.episode(0):
        calls = {
            "embedding": lambda: litellm.embedding(
                model="openai/scripted", input=["a river"], **where(server.base_url)
            ),
            "held embedding": lambda: held_embedding(
                model="openai/scripted", input=["a river"], **where(server.base_url)
            ),
            "text_completion": lambda: litellm.text_completion(
                model="openai/scripted", prompt="A lake", **where(server.base_url)
            ),
            "main.text_completion": lambda: litellm.main.text_completion(
                model="openai/scripted", prompt="A lake", **where(server.base_url)
            ),
            "moderation": lambda: litellm.moderation(input="hi", **where(server.base_url)),
        }
        for label, call in calls.items():
            name = label.split()[-1].removeprefix("main.")
            with pytest.raises(CassetteError, match=rf"litellm\.{name} cannot be recorded"):
                call()

        async def aembedding() -> Any:
            return await litellm.aembedding(
                model="openai/scripted", input=["a river"], **where(server.base_url)
            )

        with pytest.raises(CassetteError, match=r"litellm\.aembedding .*outside the patch"):
            asyncio.run(aembedding())
    assert attempts == []  # none of them reached the server, even in record mode


def test_replay_raises_offline(
    tmp_path: Path, make_server: MakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server("random")
    path = tmp_path / "run.jsonl"
    recorded(path, server.base_url)
    base = server.base_url
    server.stop()
    attempts = guard(monkeypatch)
    with cassette.open(path, "replay") as cas, patch_litellm(cas), cassette.episode(0):
        for call in (litellm.embedding, litellm.text_completion, litellm.responses):
            with pytest.raises(CassetteError, match=call.__name__):
                call(model="openai/scripted", input="x", prompt="x", **where(base))
    assert attempts == []


def test_restored_on_exit(tmp_path: Path, make_server: MakeServer) -> None:
    server = make_server("random")
    originals = {n: getattr(litellm, n) for n in UNRECORDED if hasattr(litellm, n)}
    main = {n: vars(litellm.main)[n] for n in UNRECORDED if n in vars(litellm.main)}
    assert {"embedding", "text_completion", "responses", "aembedding"} <= set(originals)
    with cassette.open(tmp_path / "run.jsonl", "record") as cas, patch_litellm(cas):
        assert litellm.embedding is not originals["embedding"]
        assert litellm.main.text_completion is not main["text_completion"]
    assert {n: getattr(litellm, n) for n in originals} == originals
    assert {n: vars(litellm.main)[n] for n in main} == main
    assert held_embedding is originals["embedding"]
    # outside the block the unpatched functions reach the server, as the error says
    got = litellm.embedding(model="openai/scripted", input=["a river"], **where(server.base_url))
    assert len(got.data[0]["embedding"]) == 8
    text = litellm.text_completion(
        model="openai/scripted", prompt="A lake", **where(server.base_url)
    )
    assert text.choices[0].text.strip()
