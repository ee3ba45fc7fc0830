"""litellm, both ways: through cassette's litellm adapter (``patch_litellm(cas)`` around
``completion``/``acompletion``), and with ``client=`` a wrapped OpenAI client (litellm then
sends through the SDK's ``client.post``). completion, acompletion, streams, tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import litellm
import pytest

from ._harness import Clients, concurrent_episodes, record_and_replay

PROMPT = "What is the weather in Lisbon for the next 3 days?"
MODEL = "openai/gpt-4o-mini"
WAYS = ("adapter", "client")
TOOLS: list[Any] = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city for the next days.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                   "days": {"type": "integer"}}, "required": ["city", "days"]},
}}]  # fmt: skip
# litellm builds pydantic adapters of its own ReadOnly TypedDicts as it loads a provider
pytestmark = pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier:UserWarning")
# what litellm draws itself for each call, not from the model's answer
DRAWN = frozenset({"litellm_call_id", "litellm_overhead_time_ms", "_response_ms"})


def way(clients: Clients, how: str, aio: bool = False) -> dict[str, Any]:
    """The keyword arguments of a litellm call that goes ``how`` (through the adapter's patch,
    entered around the run by :func:`around`, or through a wrapped client)."""
    target = {"api_base": clients.base_url, "api_key": clients.api_key}
    if how == "client":
        target["client"] = clients.aio if aio else clients.sync
    return target


def around(how: str) -> Any:
    """``patch_litellm(cas)`` around the whole run for the adapter way."""
    if how == "client":
        return None

    def patch(clients: Clients) -> Any:
        from cassette.adapters.litellm import patch_litellm

        return patch_litellm(clients.cas)

    return patch


def response(resp: Any) -> dict[str, Any]:
    """What a caller reads of a ModelResponse: its fields, each choice's logprobs, usage and
    the keys (and the non-drawn values) of its hidden params."""
    hidden = dict(getattr(resp, "_hidden_params", {}) or {})
    return {
        "type": type(resp).__name__,
        "dump": resp.model_dump(),
        "logprobs": [repr(choice.logprobs) for choice in resp.choices],
        "usage": dict(resp.usage),
        "hidden_keys": sorted(hidden),
        "hidden": json.loads(json.dumps(
            {k: v for k, v in hidden.items() if k not in DRAWN}, default=repr)),
    }  # fmt: skip


def wrapper(parts: Any) -> str:
    return "CustomStreamWrapper" if isinstance(parts, litellm.CustomStreamWrapper) else repr(parts)


def chunk(part: Any, how: str) -> dict[str, Any]:
    """A streamed chunk; through a client, litellm stamps ``created`` from its own clock."""
    dump = part.model_dump()
    if how == "client":
        dump["created"] = None
    return {"type": type(part).__name__, "dump": dump}


def messages(prompt: str) -> list[Any]:
    return [{"role": "user", "content": prompt}]


def completion(how: str) -> Any:
    def scenario(clients: Clients, prompt: str) -> Any:
        return response(litellm.completion(MODEL, messages(prompt), **way(clients, how)))

    return scenario


def acompletion(how: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        kwargs = way(clients, how, aio=True)
        return response(await litellm.acompletion(MODEL, messages(prompt), **kwargs))

    return scenario


def stream(how: str) -> Any:
    def scenario(clients: Clients, prompt: str) -> Any:
        parts = litellm.completion(MODEL, messages(prompt), stream=True, **way(clients, how))
        return {"wrapper": wrapper(parts), "chunks": [chunk(p, how) for p in parts]}

    return scenario


def astream(how: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        kwargs = way(clients, how, aio=True)
        parts = await litellm.acompletion(MODEL, messages(prompt), stream=True, **kwargs)
        return {"wrapper": wrapper(parts), "chunks": [chunk(p, how) async for p in parts]}

    return scenario


def tool_loop(how: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        history, kwargs = messages(prompt), way(clients, how, aio=True)
        first = await litellm.acompletion(MODEL, history, tools=TOOLS, **kwargs)
        call = first.choices[0].message.tool_calls[0]
        args = json.loads(call.function.arguments)
        history += [first.choices[0].message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id,
                     "content": f"{args['city']}: sunny for {args['days']} days"}]  # fmt: skip
        final = await litellm.acompletion(MODEL, history, tools=TOOLS, **kwargs)
        return [response(first), response(final)]

    return scenario


@pytest.mark.parametrize("how", WAYS)
def test_completion(tmp_path: Path, how: str) -> None:
    out = record_and_replay(tmp_path, completion(how), PROMPT, around(how))
    assert out["type"] == "ModelResponse" and out["usage"]["total_tokens"] > 0


@pytest.mark.parametrize("how", WAYS)
def test_acompletion(tmp_path: Path, how: str) -> None:
    assert record_and_replay(tmp_path, acompletion(how), PROMPT, around(how))["dump"]["choices"]


@pytest.mark.parametrize("how", WAYS)
def test_stream(tmp_path: Path, how: str) -> None:
    out = record_and_replay(tmp_path, stream(how), PROMPT, around(how))
    assert out["wrapper"] == "CustomStreamWrapper" and len(out["chunks"]) > 2


@pytest.mark.parametrize("how", WAYS)
def test_astream(tmp_path: Path, how: str) -> None:
    out = record_and_replay(tmp_path, astream(how), PROMPT, around(how))
    assert out["wrapper"] == "CustomStreamWrapper" and len(out["chunks"]) > 2


@pytest.mark.parametrize("how", WAYS)
def test_tools(tmp_path: Path, how: str) -> None:
    first, final = record_and_replay(tmp_path, tool_loop(how), PROMPT, around(how))
    assert first["dump"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
    assert "sunny" in final["dump"]["choices"][0]["message"]["content"]


@pytest.mark.parametrize("how", WAYS)
def test_eight_concurrent_episodes(tmp_path: Path, how: str) -> None:
    for _first, final in concurrent_episodes(tmp_path, tool_loop(how), PROMPT, around(how)):
        assert "sunny" in final["dump"]["choices"][0]["message"]["content"]
