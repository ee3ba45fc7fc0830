"""Size grows linearly with a trajectory."""

from __future__ import annotations

import json
import random
from pathlib import Path

import orjson

import cassette


def _text(rng: random.Random) -> str:
    out = ""
    while len(out) < 480:
        out += f"w{rng.randrange(400)} "
    return out


def test_100x30_run_is_10x_smaller_than_playback_and_stores_each_message_once(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    path = tmp_path / "run.jsonl"
    ep_bytes = 0
    unique = 0
    with cassette.open(path, "record") as cas:
        for env in range(100):
            messages = [
                {"role": "system", "content": _text(rng)},
                {"role": "user", "content": _text(rng)},
            ]
            unique += sum(len(orjson.dumps(m)) for m in messages)
            for step in range(30):
                answer = {"role": "assistant", "content": _text(rng)}
                request = {"model": "m", "messages": list(messages), "tools": tools}
                response = {"choices": [{"index": 0, "message": answer}]}
                cas.call(request, live=lambda r=response: r, env_index=env)
                tool = {"role": "tool", "tool_call_id": f"t{step}", "content": _text(rng)}
                messages += [answer, tool]
                unique += len(orjson.dumps(answer)) + len(orjson.dumps(tool))
                line = {"env_index": env, "step": step, "messages": messages}
                ep_bytes += len(json.dumps(line)) + 1
    size = path.stat().st_size
    assert ep_bytes / size >= 10, (ep_bytes, size)

    message_bytes = 0
    longest = 0
    for raw in path.read_bytes().splitlines():
        line = orjson.loads(raw)
        if line["type"] != "interaction":
            continue
        longest = max(longest, len(raw))
        stored = [m for m in line["request"]["messages"] if "$ref" not in m]
        message_bytes += sum(len(orjson.dumps(m)) for m in stored)
        message_bytes += len(orjson.dumps(line["response"]["choices"][0]["message"]))
        if line["step"] > 0:
            assert "tools" not in line["request"] and line["delta"]["same"] == "*"
    # every message's bytes are on disk once ...
    assert message_bytes <= 1.02 * unique, (message_bytes, unique)
    # ... and what else a line holds is a constant, not a function of the history
    assert longest < 2 * 1100 + 600, longest

    with cassette.open(path, "replay") as cas:  # and every request rebuilds exactly
        entry = cas.index.entries[(99, "llm", 29)]
        full = entry.full_request()
        assert len(full["messages"]) == 2 + 2 * 29 and full["tools"] == tools
        assert cas.matcher.digest(full) == entry.sha
