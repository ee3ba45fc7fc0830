"""litellm called as its users call it, against the scripted server: the arguments, a
Router, ``asyncio.run`` that closes litellm's clients, and equality of litellm objects."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any, TypeVar

import aiohttp
from litellm import ModelResponse
from litellm.llms.custom_httpx.async_client_cleanup import close_litellm_async_clients
from litellm.router import Router
from pydantic import BaseModel

__all__ = ["KEY", "TOOLS", "USER", "WEATHER", "Weather", "args", "router", "run", "same"]

T = TypeVar("T")
KEY = "fake-key-0123456789abcdef"
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]
USER: list[Any] = [{"role": "user", "content": "What is the weather like in Paris tomorrow?"}]


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run``, closing litellm's cached async clients before the loop goes."""

    async def main() -> T:
        try:
            return await coro
        finally:
            await close_litellm_async_clients()  # type: ignore[no-untyped-call]
            # litellm's live atext_completion makes an openai client it caches nowhere,
            # whose aiohttp session stays open: closed here, on its own loop, rather than
            # reported as an unclosed transport by whichever later test collects it
            for leftover in gc.get_objects():
                if isinstance(leftover, aiohttp.ClientSession) and not leftover.closed:
                    await leftover.close()

    return asyncio.run(main())


class Weather(BaseModel):
    city: str
    days: int


def router(base: str, model: str = "openai/scripted") -> Any:
    """A ``litellm.Router`` with one deployment, "fast", on the scripted server. Made
    inside a running loop: litellm starts its cache-sync task there, not on a loop of its
    own that it never closes."""

    async def make() -> Any:
        deployment = {"model": model, "api_base": base, "api_key": KEY}
        return Router(
            model_list=[{"model_name": "fast", "litellm_params": deployment}], num_retries=0
        )

    return run(make())


def args(base: str, **kwargs: Any) -> dict[str, Any]:
    return {"model": "openai/scripted", "api_base": base, "api_key": KEY, "num_retries": 0,
            "max_retries": 0, **kwargs}  # fmt: skip


def same(recorded: Any, replayed: Any) -> None:
    """Equal as litellm objects: fields, private state, dumps and types."""
    if isinstance(recorded, list):
        assert [type(c) for c in replayed] == [type(c) for c in recorded]
        assert len(replayed) == len(recorded)
        for a, b in zip(recorded, replayed, strict=True):
            same(a, b)
        return
    assert type(replayed) is type(recorded)
    assert replayed == recorded  # pydantic: fields, extra and private attributes
    assert replayed.model_dump() == recorded.model_dump()
    assert replayed._hidden_params == recorded._hidden_params
    for ra, rb in zip(recorded.choices, replayed.choices, strict=True):
        assert rb.logprobs == ra.logprobs  # an attribute, as on the live object
    if isinstance(recorded, ModelResponse):
        assert replayed.usage == recorded.usage
        assert replayed._response_ms == recorded._response_ms
