"""An episode as a rollout worker runs it (the Ray and process-pool tests import it).

The worker's code names no cassette, shard or mode: ``cassette.open()`` takes them from
the environment (``CASSETTE_PATH``, ``CASSETTE_MODE``, ``CASSETTE_RUN``), and a directory
URL gives each worker process its own shard (``<host>-<pid>.jsonl``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_episode"]


def run_episode(env: int, base_url: str, steps: int = 3) -> dict[str, Any]:
    import openai

    import cassette
    from cassette.adapters.openai import wrap_openai

    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0, timeout=10)
    texts: list[str] = []
    with cassette.open() as cas:
        llm = wrap_openai(client, cas)
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"episode {env}: start"}]
        with cassette.episode(env):
            for step in range(steps):
                reply = llm.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
                text = reply.choices[0].message.content or ""
                texts.append(text)
                messages += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": f"step {step} done, go on"},
                ]
        cas.outcome(env, reward=float(env % 3), terminated=True)
        mode = cas.mode.value
    return {"env": env, "texts": texts, "mode": mode}
