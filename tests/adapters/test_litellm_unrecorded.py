"""patch_litellm and litellm's entry points it does not record (get_responses and
delete_responses, image generation, transcription, speech, moderation, rerank, ...): inside
the block each raises a CassetteError naming it, in every mode, and reaches no server;
leaving the block restores them. Real litellm over real HTTP."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

import asyncio
import inspect
import socket
from pathlib import Path
from typing import Any

import litellm
import litellm.main
import pytest
from litellm import moderation as held_moderation

import cassette
from cassette import CassetteError
from cassette.adapters.litellm import UNRECORDED, patch_litellm
from tests.helpers.chat import MakeServer

pytestmark = pytest.mark.usefixtures("litellm_leftovers")

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


def refused() -> list[str]:
    """The refused entry points this litellm has."""
    return [n for n in UNRECORDED if n in vars(litellm) or n in vars(litellm.main)]


def call_refused(name: str, base: str) -> None:
    """Call litellm.<name> (awaited when it is a coroutine function) with any arguments:
    the patch refuses it before looking at them."""
    function = getattr(litellm, name, None) or vars(litellm.main)[name]
    got = function(model="openai/scripted", input="a river", prompt="A lake", **where(base))
    if inspect.isawaitable(got):
        asyncio.run(got)


@pytest.mark.parametrize("mode", MODES)
def test_unrecorded_entry_points_raise_in_every_mode(
    mode: str, tmp_path: Path, make_server: MakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server("random")
    path = tmp_path / "run.jsonl"
    recorded(path, server.base_url)
    names = refused()
    assert {"get_responses", "adelete_responses", "image_generation", "transcription",
            "speech", "moderation", "rerank"} <= set(names)  # fmt: skip
    assert not {"responses", "aresponses"} & set(names)  # recorded
    attempts = guard(monkeypatch)
    with cassette.open(path, mode) as cas, patch_litellm(cas), cassette.episode(0):
        for name in names:
            fix = rf"^litellm\.{name} cannot be recorded by patch_litellm .*outside the patch"
            with pytest.raises(CassetteError, match=fix):
                call_refused(name, server.base_url)
        with pytest.raises(CassetteError, match=r"litellm\.moderation cannot be recorded"):
            held_moderation(input="hi", **where(server.base_url))  # a reference held before
    assert attempts == []  # none of them reached the server, even in record mode
    assert server.request_count == 1  # the recorded completion


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
        for name in refused():
            with pytest.raises(CassetteError, match=rf"litellm\.{name} "):
                call_refused(name, base)
    assert attempts == []


def test_restored_on_exit(tmp_path: Path, make_server: MakeServer) -> None:
    server = make_server("random")
    originals = {n: getattr(litellm, n) for n in UNRECORDED if hasattr(litellm, n)}
    main = {n: vars(litellm.main)[n] for n in UNRECORDED if n in vars(litellm.main)}
    assert {"get_responses", "moderation", "image_generation", "aspeech"} <= set(originals)
    with cassette.open(tmp_path / "run.jsonl", "record") as cas, patch_litellm(cas):
        assert litellm.moderation is not originals["moderation"]
        assert litellm.main.speech is not main["speech"]
    assert {n: getattr(litellm, n) for n in originals} == originals
    assert {n: vars(litellm.main)[n] for n in main} == main
    assert held_moderation is originals["moderation"]
    # outside the block the unpatched functions reach the server, as the error says
    got = litellm.moderation(input="hi", model="openai/scripted", **where(server.base_url))
    assert got.results[0].flagged is False
    assert server.request_count == 1
