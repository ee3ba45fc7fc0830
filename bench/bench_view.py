"""``cassette view`` at scale: a run of 10,000 episodes x 50 interactions (500,000 lines),
its page built and opened in headless Chromium (the DevTools protocol, over a pipe).

Prints the cassette's and the page's sizes, the time to build the page, the time from
navigation to the first table painted (target <= 3 s), and the time to open an episode,
median of 20 (target <= 200 ms).

    python bench/bench_view.py [--episodes 10000] [--steps 50]

Chromium comes from Debian's package (apt-get install chromium).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cassette
from bench._common import TOOLS, command_line
from cassette.view import build_page, load_run, write_page
from fixtures.cdp import Browser


def make_run(path: Path, episodes: int, steps: int) -> None:
    """An agent run: each step answers with a tool call whose result the next request
    carries, so conversations grow as real ones do."""
    with cassette.open(path, mode="record") as cas:
        for e in range(episodes):
            messages = [
                {"role": "system", "content": "You are a support agent. Use the tools."},
                {"role": "user", "content": f"Customer {e} asks where order #{e * 7} is."},
            ]
            for s in range(steps):
                call = {
                    "id": f"call_{e}_{s}",
                    "type": "function",
                    "function": {
                        "name": "lookup_order",
                        "arguments": json.dumps({"query": f"#{e * 7}/{s}"}),
                    },
                }
                answer = {
                    "id": f"r{e}.{s}",
                    "object": "chat.completion",
                    "model": "m",
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "tool_calls",
                            "message": {
                                "role": "assistant",
                                "content": f"Checking step {s}.",
                                "tool_calls": [call],
                            },
                        }
                    ],
                    "usage": {
                        "prompt_tokens": 200 + 40 * s,
                        "completion_tokens": 20,
                        "total_tokens": 220 + 40 * s,
                    },
                }
                request = {"model": "m", "messages": messages, "tools": TOOLS}
                cas.call(request, live=lambda a=answer: a, env_index=e)
                messages = [
                    *messages,
                    answer["choices"][0]["message"],  # type: ignore[index]
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": f"order #{e * 7}: in transit, depot {s}",
                    },
                ]
            cas.outcome(e, reward=float(e % 3 == 0), terminated=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-view-"))
    run = work / "run.jsonl"
    t0 = time.perf_counter()
    make_run(run, args.episodes, args.steps)
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    page = work / "run.html"
    write_page(build_page([load_run(run, run.name)]), page)
    built = time.perf_counter() - t0
    jsonl, html = run.stat().st_size, page.stat().st_size
    with Browser() as browser:
        tab = browser.open(page.as_uri())
        tab.wait("performance.getEntriesByName('cassette-table').length")
        first = tab.eval("performance.getEntriesByName('cassette-table')[0].startTime")
        opens = []
        for i in range(20):
            key = (i * 487) % args.episodes
            tab.eval("performance.clearMarks('cassette-episode')")
            tab.eval(
                f"(() => {{ window.__t0 = performance.now(); "
                f"location.hash = '#run=0&episode={key}'; }})()"
            )
            tab.wait("performance.getEntriesByName('cassette-episode').length")
            opens.append(
                tab.eval(
                    "performance.getEntriesByName('cassette-episode')[0].startTime - window.__t0"
                )
            )
        assert tab.errors == [], tab.errors
    print(f"$ {command_line()}")
    print(f"{args.episodes:,} episodes x {args.steps} interactions (recorded in {made:.0f} s)\n")
    print("| what | measured | target |")
    print("|---|---|---|")
    print(f"| cassette (JSONL) | {jsonl / 1e6:,.1f} MB | |")
    print(
        f"| page (one HTML file) | {html / 1e6:,.1f} MB ({html / jsonl:.2f}x the JSONL) | <= 0.5x |"
    )
    print(f"| building the page | {built:.1f} s | |")
    print(f"| first table painted | {first / 1000:.2f} s | <= 3 s |")
    print(
        f"| an episode opened (median of 20; max) | {statistics.median(opens):.0f} ms "
        f"({max(opens):.0f} ms) | <= 200 ms |"
    )


if __name__ == "__main__":
    main()
