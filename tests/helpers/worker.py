"""A recording worker run as a separate process by the concurrency and crash tests.

    python worker.py PATH MODE --envs 0,1 --steps 5 [--pause-after N [--go FILE]]
        [--sleep SECONDS]

It plays ``--steps`` chat turns in each episode of ``--envs`` through ``cassette.call``
(the conversation is :func:`request_for` / :func:`response_for`, which the tests import to
check what was written). After ``--pause-after`` interactions it prints ``READY <n>`` and
waits: for the file ``--go`` to exist, or forever (until the test kills it). At the end it
prints ``LIVE <n>``, the number of live calls it made, and closes the cassette.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

MODEL = "test-model"
SYSTEM = {"role": "system", "content": "You are a terse assistant."}


def user_message(env: int | str, step: int) -> dict[str, Any]:
    return {"role": "user", "content": f"episode {env}, turn {step}: what next?"}


def assistant_message(env: int | str, step: int) -> dict[str, Any]:
    return {"role": "assistant", "content": f"answer {step} of episode {env}"}


def request_for(env: int | str, step: int) -> dict[str, Any]:
    """The request of turn ``step``: the whole conversation so far, growing each turn,
    with the assistant's earlier answers in it (so the cassette delta-encodes it)."""
    messages: list[dict[str, Any]] = [SYSTEM, user_message(env, 0)]
    for k in range(1, step + 1):
        messages += [assistant_message(env, k - 1), user_message(env, k)]
    return {"model": MODEL, "temperature": 0.0, "messages": messages}


def response_for(env: int | str, step: int) -> dict[str, Any]:
    return {
        "id": f"resp-{env}-{step}",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [{"index": 0, "message": assistant_message(env, step), "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10 + step, "completion_tokens": 5, "total_tokens": 15 + step},
    }


def main(argv: list[str] | None = None) -> int:
    import cassette

    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("mode")
    parser.add_argument("--envs", required=True, help="comma-separated episode numbers")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--pause-after", type=int, default=None)
    parser.add_argument("--go", default=None, help="file whose existence ends the pause")
    parser.add_argument("--sleep", type=float, default=0.0, help="latency of each live call")
    args = parser.parse_args(argv)

    envs = [int(e) for e in args.envs.split(",")]
    live_calls = 0
    done = 0

    def live(env: int, step: int) -> dict[str, Any]:
        nonlocal live_calls
        live_calls += 1
        if args.sleep:
            time.sleep(args.sleep)
        return response_for(env, step)

    cas = cassette.open(args.path, args.mode)
    for env in envs:
        with cassette.episode(env):
            for step in range(args.steps):
                got = cas.call(request_for(env, step), live=functools.partial(live, env, step))
                if got != response_for(env, step):
                    print(f"WRONG {env} {step} {got!r}", flush=True)
                    return 1
                done += 1
                if done == args.pause_after:
                    print(f"READY {done} {os.getpid()}", flush=True)
                    if args.go is None:
                        while True:  # wait to be killed
                            time.sleep(60)
                    go = Path(args.go)
                    deadline = time.monotonic() + 30
                    while not go.exists():
                        if time.monotonic() > deadline:
                            print("TIMEOUT waiting for the go file", flush=True)
                            return 2
                        time.sleep(0.001)
    cas.close()
    print(f"LIVE {live_calls}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
