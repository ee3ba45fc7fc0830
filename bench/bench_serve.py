"""``cassette serve`` against its floor, in one run: replayed calls per second and p50/p99
latency at 1, 8 and 64 concurrent clients on a 3.6 KB chat request, next to a bare
starlette/uvicorn endpoint that reads the body and returns the same bytes (the floor);
and a stream's time to first byte while recording, next to the upstream's own.

Targets: replay throughput >= 0.5x the floor's; p50 overhead <= 1 ms over the floor;
recording TTFT within 5 ms of the upstream's.

    python bench/bench_serve.py [--calls 1920] [--rounds 5] [--in-process]

Both servers run as processes of their own on 127.0.0.1, started once and kept warm (the
replay server is rewound between runs, ``POST /cassette/rewind``); the load comes from one
asyncio process (a plain keep-alive HTTP/1.1 client, one connection per client), the same
for both, so what differs is the server. Each row is ``--rounds`` paired runs, the two
servers taking turns at going first; it shows medians (the ratio: of the rounds' ratios),
the p50 difference taken within each round (and its range over the rounds), and each
server's CPU time per call (from /proc). In a closed loop the p50 at N clients is about N x
the server's time per call, so "p50 over" at 64 clients is about 64 x the difference of
the CPU columns. The machine has two cores shared by the servers and the client: compare
the ratios, not the absolute figures. Last, the server's own work per call with no
sockets: the CPU time of ``cassette serve``'s app replaying every call in this process,
next to the floor's starlette app and a bare ASGI app that answers the same bytes
(``--in-process``: only that).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cassette
from bench._common import command_line
from bench._floor import floor_app

SYSTEM = ("You are a support agent. Answer briefly and cite the order. " * 60)[:3500]
ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Your order ships today."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 900, "completion_tokens": 6, "total_tokens": 906},
}


def body(episode: int, step: int) -> dict[str, Any]:
    user = f"episode {episode} step {step}: where is my order?"
    return {
        "model": "m",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
    }


def make_cassette(path: Path, episodes: int, steps: int) -> None:
    with cassette.open(path, mode="record") as cas:
        for e in range(episodes):
            for s in range(steps):
                request = {**body(e, s), "endpoint": "chat.completions"}
                cas.call(request, live=lambda: ANSWER, env_index=f"e{e}")


Server = tuple[subprocess.Popen[str], str]  # (the process, its base URL)


def start(argv: list[str]) -> Server:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY "):
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.split()[1]


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)


async def _client(host: str, port: int, episode: int, steps: int, latencies: list[float]) -> None:
    """One client: its own keep-alive connection, the steps of one episode in order. A
    plain HTTP/1.1 client on asyncio streams: httpx's pool itself collapses past about 16
    concurrent connections on this machine, which would measure the client, not the server."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        for step in range(steps):
            content = orjson.dumps(body(episode, step))
            head = (
                f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}\r\n"
                f"content-type: application/json\r\ncontent-length: {len(content)}\r\n"
                f"x-cassette-episode: e{episode}\r\n\r\n"
            )
            t0 = time.perf_counter()
            writer.write(head.encode() + content)
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            answer = await reader.readexactly(length)
            latencies.append((time.perf_counter() - t0) * 1000)
            if status.split()[1] != b"200":
                raise SystemExit(f"{status.decode().strip()}: {answer[:300]!r}")
    finally:
        writer.close()


async def load(base: str, clients: int, steps: int) -> tuple[float, list[float]]:
    """(calls per second, latencies in ms) of ``clients`` concurrent episodes."""
    host, port = base.split("//")[1].split("/")[0].split(":")
    latencies: list[float] = []
    t0 = time.perf_counter()
    await asyncio.gather(*(_client(host, int(port), e, steps, latencies) for e in range(clients)))
    return len(latencies) / (time.perf_counter() - t0), latencies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def ttft(url: str, rounds: int) -> float:
    """The median time to the first byte of a streamed answer, in ms."""
    times = []
    async with httpx.AsyncClient(timeout=60) as client:
        for i in range(rounds):
            payload = {**body(1000 + i, 0), "stream": True}
            t0 = time.perf_counter()
            async with client.stream("POST", url + "/chat/completions", json=payload) as r:
                async for _ in r.aiter_raw():
                    times.append((time.perf_counter() - t0) * 1000)
                    break
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1920, help="replayed calls per row")
    parser.add_argument("--rounds", type=int, default=5, help="paired runs per row (medians)")
    parser.add_argument("--in-process", action="store_true", help="only the in-process cost")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serve-") as work:  # (76 MB of cassette)
        run(Path(work), args)


def run(work: Path, args: argparse.Namespace) -> None:
    levels = (1, 8, 64)
    steps = {c: max(1, args.calls // c) for c in levels}
    path = work / "replay.jsonl"
    make_cassette(path, 64, max(steps.values()))
    if args.in_process:
        print(f"$ {command_line()}")
        asyncio.run(in_process(path, steps[64]))
        return
    py = sys.executable
    served = start([py, "-m", "cassette", "serve", "--cassette", str(path), "--mode", "replay"])
    floor = start([py, "-m", "bench._floor", orjson.dumps(ANSWER).decode()])
    print(f"$ {command_line()}")
    print(
        f"request {len(orjson.dumps(body(0, 0)))} bytes; {args.calls} calls a row and server, "
        f"{args.rounds} paired rounds (medians)\n"
    )
    print(
        f"{'clients':>7} | {'floor calls/s':>13} | {'serve calls/s':>13} | {'ratio':>5} | "
        f"{'floor p50':>9} | {'serve p50':>9} | {'p50 over':>8} | {'over, range':>13} | "
        f"{'floor p99':>9} | {'serve p99':>9} | {'CPU/call':>15}"
    )
    try:
        for c in levels:
            print(row(c, rounds(floor, served, c, steps[c], args.rounds)))
        stop(served[0])
        stop(floor[0])
        ttft_table(work, py)
        asyncio.run(in_process(path, steps[64]))
    finally:
        for proc, _ in (served, floor):
            if proc.poll() is None:
                proc.kill()


def cpu_seconds(pid: int) -> float:
    """The CPU time a process has run, from /proc (its main thread's schedstat, in ns, else its
    stat, in clock ticks); 0 where there is no /proc."""
    schedstat = Path(f"/proc/{pid}/schedstat")
    if schedstat.exists():
        return int(schedstat.read_text().split()[0]) / 1e9
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return 0.0
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(server: Server, clients: int, steps: int) -> tuple[float, list[float], float]:
    """(calls per second, latencies in ms, the server's CPU µs a call) of one run. A replay
    server is rewound after it (``POST /cassette/rewind``): the next run gets the same
    answers from the same warm process, as the floor's next run does."""
    (proc, url), root = server, server[1].removesuffix("/v1")
    before = cpu_seconds(proc.pid)
    rate, latencies = asyncio.run(load(url, clients, steps))
    cpu = (cpu_seconds(proc.pid) - before) / len(latencies) * 1e6
    if httpx.post(root + "/cassette/rewind").status_code not in (200, 404):
        raise SystemExit(f"could not rewind {root}")
    return rate, latencies, cpu


def rounds(floor: Server, served: Server, clients: int, steps: int, count: int) -> list[Any]:
    """``count`` paired runs of both servers, taking turns at going first (after one run
    of each to warm them up, not counted): noise on a shared machine moves a run by more
    than the difference measured, so each round is one sample of it."""
    for server in (floor, served):
        measured(server, clients, max(1, steps // 4))
    samples = []
    for i in range(count):
        if i % 2:  # (the right side runs left to right: the replay server first)
            serve_run, floor_run = measured(served, clients, steps), measured(floor, clients, steps)
        else:
            floor_run, serve_run = measured(floor, clients, steps), measured(served, clients, steps)
        samples.append((floor_run, serve_run))
    return samples


def row(clients: int, samples: list[Any]) -> str:
    """The table's row: medians over the rounds, the p50 difference taken in each round."""

    def med(f: Any) -> float:
        return statistics.median(f(floor, served) for floor, served in samples)

    overs = sorted(pct(s[1], 0.5) - pct(f[1], 0.5) for f, s in samples)
    cpu = f"{med(lambda f, s: f[2]):.0f} / {med(lambda f, s: s[2]):.0f} µs"
    return (
        f"{clients:>7} | {med(lambda f, s: f[0]):>13,.0f} | {med(lambda f, s: s[0]):>13,.0f} | "
        f"{med(lambda f, s: s[0] / f[0]):>5.2f} | {med(lambda f, s: pct(f[1], 0.5)):>7.2f}ms | "
        f"{med(lambda f, s: pct(s[1], 0.5)):>7.2f}ms | {statistics.median(overs):>6.2f}ms | "
        f"{overs[0]:>5.2f}..{overs[-1]:.2f}ms | {med(lambda f, s: pct(f[1], 0.99)):>7.2f}ms | "
        f"{med(lambda f, s: pct(s[1], 0.99)):>7.2f}ms | {cpu:>15}"
    )


def _scope(episode: int, step: int) -> tuple[dict[str, Any], bytes]:
    """The ASGI scope and body of one of the load's requests."""
    content = orjson.dumps(body(episode, step))
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
    length, episode_name = b"%d" % len(content), b"e%d" % episode
    headers += [(b"content-length", length), (b"x-cassette-episode", episode_name)]
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions"}
    return {**scope, "query_string": b"", "headers": headers}, content


async def _cpu_per_call(app: Any, calls: list[tuple[dict[str, Any], bytes]]) -> float:
    """The CPU time of one pass of ``app`` over ``calls``, per call, in µs."""
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    t0 = time.process_time()
    for scope, content in calls:
        message = {"type": "http.request", "body": content, "more_body": False}

        async def receive(message: Any = message) -> Any:
            return message

        await app(scope, receive, send)
    spent = (time.process_time() - t0) / len(calls) * 1e6
    if any(m.get("status", 200) != 200 for m in sent):
        raise SystemExit(f"a call failed in process: {[m for m in sent if 'status' in m][:1]}")
    return spent


async def in_process(path: Path, steps: int, passes: int = 15) -> None:
    """The server's app and a bare one, their CPU time per call (median of ``passes``)."""
    from cassette.replay.episodes import Conversations
    from cassette.serve import create_app

    cas = cassette.open(path, mode="replay")
    cas.episodes = Conversations(recorded=cas.index.episodes(), rewind=cas.rewind)
    gc.freeze()  # (as `cassette serve` does: the collector no longer walks the cassette)
    app = create_app(cas)
    answer = orjson.dumps(ANSWER)

    async def bare(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    apps = {"serve": app, "floor": floor_app(answer), "bare": bare}
    calls = [_scope(e, s) for s in range(steps) for e in range(64)]
    got: dict[str, list[float]] = {name: [] for name in apps}
    for _ in range(passes):
        cas.rewind()
        for name, each in apps.items():
            got[name].append(await _cpu_per_call(each, calls))
    cas.close()
    serve, floor, bare_ = (statistics.median(got[k]) for k in apps)
    print(
        f"\nin process, CPU per replayed call (median of {passes} passes over {len(calls)} "
        f"calls): serve {serve:.1f} µs, the floor's app {floor:.1f} µs (+{serve - floor:.1f} "
        f"µs), a bare ASGI app {bare_:.1f} µs"
    )


def ttft_table(work: Path, py: str) -> None:
    upstream, up_url = start(
        [
            py,
            "-m",
            "cassette.testing.server",
            "--port",
            "0",
            "--mode",
            "random",
            "--chunk-delay-ms",
            "5",
        ]
    )
    recording, rec_url = start(
        [
            py,
            "-m",
            "cassette",
            "serve",
            "--cassette",
            str(work / "rec.jsonl"),
            "--mode",
            "record",
            "--upstream",
            up_url,
        ]
    )
    try:
        direct = asyncio.run(ttft(up_url, 30))
        through = asyncio.run(ttft(rec_url, 30))
    finally:
        stop(recording)
        stop(upstream)
    print(
        f"\nstream TTFT, median of 30: upstream {direct:.2f} ms, through a recording "
        f"server {through:.2f} ms ({through - direct:+.2f} ms; target within 5 ms)"
    )


if __name__ == "__main__":
    main()
