"""Growing conversations played through the real openai SDK, one episode each: what the
fork tests record, fork and replay."""

from __future__ import annotations

from typing import Any

from openai import OpenAI

import cassette
from cassette.adapters.openai import wrap_openai
from tests.helpers.chat import Loop

__all__ = ["run_loops"]


def run_loops(
    cas: Any, url: str, steps: int = 4, changed: dict[int, int] | None = None
) -> list[Any]:
    """3 episodes of a growing conversation; ``changed={env: step}`` alters that step's
    follow-up message (the request after it differs from the base)."""
    client = OpenAI(base_url=url, api_key="sk-test", max_retries=0)
    try:
        wrapped = wrap_openai(client, cas)
        out = []
        for env in range(3):
            loop = Loop(env)
            with cassette.episode(env):
                for step in range(steps):
                    reply = wrapped.chat.completions.create(**loop.request()).model_dump()
                    out.append(reply["choices"][0]["message"]["content"])
                    follow = "other" if (changed or {}).get(env) == step else "go on"
                    loop.answer(reply, follow)
        return out
    finally:
        client.close()
