"""wrap_policy around policies that call the real litellm over real HTTP: the ModelResponse
comes back equal (logprobs, _hidden_params, usage), and a returned CustomStreamWrapper
replays chunk by chunk as one."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no fetch at import

from pathlib import Path
from typing import Any

import litellm
import pytest
from litellm import ModelResponse
from litellm.litellm_core_utils.streaming_handler import CustomStreamWrapper
from litellm.types.utils import ModelResponseStream

import cassette
from cassette.adapters.policy import wrap_policy
from tests.helpers.chat import MakeServer
from tests.helpers.litellm_calls import TOOLS, USER, args, run, same

pytestmark = pytest.mark.usefixtures("litellm_leftovers")


class Policies:
    """Chat policies that call litellm: answers, or litellm's own stream."""

    def __init__(self, base: str) -> None:
        self.base, self.calls = base, 0

    def chat(self, messages: list[Any], tools: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        return litellm.completion(messages=messages, tools=tools, **args(self.base), **kwargs)

    async def achat(self, messages: list[Any], tools: Any = None, **kwargs: Any) -> Any:
        self.calls += 1
        return await litellm.acompletion(
            messages=messages, tools=tools, **args(self.base), **kwargs
        )


def episode(policies: Policies, cas: cassette.Cassette) -> list[Any]:
    chat = wrap_policy(policies.chat, cas)
    first = chat(USER, TOOLS)
    messages = [*USER, first.choices[0].message, {"role": "user", "content": "say it"}]
    stream = chat(messages, stream=True)
    assert isinstance(stream, CustomStreamWrapper)
    return [first, list(stream)]


async def aepisode(policies: Policies, cas: cassette.Cassette) -> list[Any]:
    chat = wrap_policy(policies.achat, cas)
    first = await chat(USER, TOOLS, logprobs=True)
    messages = [*USER, first.choices[0].message, {"role": "user", "content": "say it"}]
    stream = await chat(messages, stream=True, stream_options={"include_usage": True})
    assert isinstance(stream, CustomStreamWrapper)
    return [first, [chunk async for chunk in stream]]


@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_litellm_policies_replay_equal_offline(
    make_server: MakeServer, path: Path, request: pytest.FixtureRequest, aio: bool
) -> None:
    server = make_server("random")
    live = Policies(server.base_url)
    with cassette.open(path, "record") as cas:
        recorded = run(aepisode(live, cas)) if aio else episode(live, cas)
    assert live.calls == 2 == server.request_count
    assert type(recorded[0]) is ModelResponse
    base = server.base_url
    server.stop()
    request.getfixturevalue("no_network")
    for _ in range(3):
        other = Policies(base)
        with cassette.open(path, "replay") as cas:
            replayed = run(aepisode(other, cas)) if aio else episode(other, cas)
        assert other.calls == 0
        same(recorded, replayed)
        assert replayed[0].choices[0].logprobs is None  # an attribute, as live
        assert all(type(c) is ModelResponseStream for c in replayed[1])
        assert replayed[0]._hidden_params.keys() == recorded[0]._hidden_params.keys()
