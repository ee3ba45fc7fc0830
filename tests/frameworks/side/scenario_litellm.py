"""litellm, three ways: through cassette's litellm adapter (``patch_litellm(cas)`` around
``completion``/``acompletion``), with ``client=`` a wrapped OpenAI client (litellm then
sends through the SDK's ``client.post``), and as a policy under ``wrap_policy``.
completion, acompletion, streams (``CustomStreamWrapper``), tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import litellm
import pytest

from ._harness import Clients, concurrent_episodes, record_and_replay

PROMPT = "What is the weather in Lisbon for the next 3 days?"
MODEL = "openai/gpt-4o-mini"
WAYS = ("adapter", "client", "policy")
TOOLS: list[Any] = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city for the next days.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                   "days": {"type": "integer"}}, "required": ["city", "days"]},
}}]  # fmt: skip
# litellm builds pydantic adapters of its own ReadOnly TypedDicts as it loads a provider
pytestmark = pytest.mark.filterwarnings("ignore:Item.* using the `ReadOnly` qualifier:UserWarning")
# what litellm draws itself for each call, not from the model's answer
DRAWN = frozenset({"litellm_call_id", "litellm_overhead_time_ms", "_response_ms"})


def complete(
    clients: Clients, how: str, history: list[Any], aio: bool = False, **options: Any
) -> Any:
    """``litellm.completion`` (``acompletion`` if ``aio``) going ``how``: through the
    adapter's patch (entered around the run by :func:`around`), through a wrapped client
    (``client=``), or as a policy wrapped by ``wrap_policy``."""
    target = {"api_base": clients.base_url, "api_key": clients.api_key}
    if how == "client":
        target["client"] = clients.aio if aio else clients.sync
    if how != "policy":
        return (litellm.acompletion if aio else litellm.completion)(
            MODEL, history, **target, **options
        )
    key = f"policy-{aio}"
    if key not in clients.extra:
        from cassette.adapters.policy import wrap_policy

        def policy(messages: list[Any], tools: Any = None, **kwargs: Any) -> Any:
            return litellm.completion(MODEL, messages, tools=tools, **kwargs, **target)

        async def apolicy(messages: list[Any], tools: Any = None, **kwargs: Any) -> Any:
            return await litellm.acompletion(MODEL, messages, tools=tools, **kwargs, **target)

        clients.extra[key] = wrap_policy(apolicy if aio else policy, clients.cas)
    return clients.extra[key](history, **options)


def around(how: str) -> Any:
    """``patch_litellm(cas)`` around the whole run for the adapter way."""
    if how != "adapter":
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
        return response(complete(clients, how, messages(prompt)))

    return scenario


def acompletion(how: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        return response(await complete(clients, how, messages(prompt), aio=True))

    return scenario


def stream(how: str) -> Any:
    def scenario(clients: Clients, prompt: str) -> Any:
        parts = complete(clients, how, messages(prompt), stream=True)
        return {"wrapper": wrapper(parts), "chunks": [chunk(p, how) for p in parts]}

    return scenario


def astream(how: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        parts = await complete(clients, how, messages(prompt), aio=True, stream=True)
        return {"wrapper": wrapper(parts), "chunks": [chunk(p, how) async for p in parts]}

    return scenario


def tool_loop(how: str) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        history = messages(prompt)
        first = await complete(clients, how, history, aio=True, tools=TOOLS)
        call = first.choices[0].message.tool_calls[0]
        args = json.loads(call.function.arguments)
        history += [first.choices[0].message.model_dump(exclude_none=True),
                    {"role": "tool", "tool_call_id": call.id,
                     "content": f"{args['city']}: sunny for {args['days']} days"}]  # fmt: skip
        final = await complete(clients, how, history, aio=True, tools=TOOLS)
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
