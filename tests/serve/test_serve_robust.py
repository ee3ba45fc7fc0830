"""``cassette serve`` under what real clients and broken peers do: curl, 64 concurrent
streams, an oversized body, bytes that are not HTTP, a client that leaves mid-stream, an
upstream that dies mid-stream. The server answers or closes cleanly and keeps serving;
nothing partial is ever served later as complete."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

Serve = Callable[..., str]  # the serve fixture (conftest.py)
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}


def curl(url: str, body: dict[str, Any]) -> str:
    proc = subprocess.run(
        [
            "curl",
            "-sS",
            "--fail-with-body",
            "-H",
            "Content-Type: application/json",
            "-H",
            "Authorization: Bearer sk-curl-secret-000000000000",
            "-d",
            json.dumps(body),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_curl_plain_and_streamed(serve: Serve, make_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "curl.jsonl"
    upstream = make_server("random")
    url = serve(path, "record", "--upstream", upstream.base_url) + "/chat/completions"
    recorded = [curl(url, CHAT), curl(url, {**CHAT, "stream": True})]
    assert recorded[1].rstrip().endswith("data: [DONE]")
    upstream.stop()
    url = serve(path, "replay") + "/chat/completions"
    assert [curl(url, CHAT), curl(url, {**CHAT, "stream": True})] == recorded
    assert "sk-curl-secret" not in path.read_text()


def test_64_concurrent_streams_record_and_replay(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "many.jsonl"
    upstream = make_server("random")

    async def run(base: str) -> list[str]:
        client = openai.AsyncOpenAI(base_url=base, api_key="sk-x", max_retries=0)

        async def one(i: int) -> str:
            stream = await client.chat.completions.create(
                model="m",
                stream=True,
                messages=[{"role": "user", "content": f"question {i}"}],
                extra_headers={"X-Cassette-Episode": f"e{i}"},
            )
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

        try:
            return await asyncio.gather(*(one(i) for i in range(64)))
        finally:
            await client.close()

    recorded = asyncio.run(run(serve(path, "record", "--upstream", upstream.base_url)))
    upstream.stop()
    assert all(recorded)
    assert asyncio.run(run(serve(path, "replay"))) == recorded


def test_an_oversized_body_is_refused_and_the_server_lives(serve: Serve, empty: Path) -> None:
    root = serve(empty, "replay")
    big = b'{"model": "m", "messages": [], "pad": "' + b"x" * (33 * 1024 * 1024) + b'"}'
    response = httpx.post(root + "/chat/completions", content=big, timeout=60)
    assert response.status_code == 413
    assert "smaller" in response.json()["error"]["message"]
    assert httpx.post(root + "/chat/completions", json=CHAT).status_code == 404  # a miss


@pytest.mark.parametrize(
    "raw",
    [
        b"NOT HTTP AT ALL\r\n\r\n",
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nbad header\r\n\r\n",
        b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: -4\r\n\r\n",
    ],
)
def test_bytes_that_are_not_http_get_a_400_and_the_server_lives(
    serve: Serve, empty: Path, raw: bytes
) -> None:
    root = serve(empty, "replay")
    host, port = root.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        answer = b""
        while chunk := sock.recv(65536):  # the server answers, then closes the connection
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert httpx.post(root + "/chat/completions", json=CHAT).status_code == 404  # a miss


def test_the_episode_and_step_headers_key_a_call_and_a_bad_step_is_refused(
    serve: Serve, empty: Path
) -> None:
    url = serve(empty, "replay") + "/chat/completions"
    named = {"X-Cassette-Episode": "task-7", "X-Cassette-Step": "3"}
    miss = httpx.post(url, json=CHAT, headers=named).json()["error"]["message"]
    assert "env_index='task-7' channel='llm' step=3;" in miss
    numbered = httpx.post(url, json=CHAT, headers={"X-Cassette-Episode": "12"})
    assert "env_index=12 channel='llm' step=0;" in numbered.json()["error"]["message"]
    bad = httpx.post(url, json=CHAT, headers={**named, "X-Cassette-Step": "x1"})
    assert bad.status_code == 400
    assert bad.headers["x-should-retry"] == "false"
    assert bad.json()["error"]["message"] == (
        "X-Cassette-Step is 'x1'; send a step number (0, 1, ...)"
    )


def test_a_body_without_a_length_is_read_whole_and_counted(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "chunked.jsonl"
    upstream = make_server("random")
    url = serve(path, "record", "--upstream", upstream.base_url) + "/chat/completions"
    recorded = httpx.post(url, json=CHAT).json()
    upstream.stop()
    url = serve(path, "replay") + "/chat/completions"
    raw = json.dumps(CHAT).encode()
    pieces = iter([raw[:10], raw[10:]])  # an iterator: sent chunked, with no length
    assert httpx.post(url, content=pieces).json() == recorded
    big = (b" " * 1024 * 1024 for _ in range(33))
    response = httpx.post(url, content=big, timeout=60)
    assert response.status_code == 413
    assert "smaller" in response.json()["error"]["message"]


def test_a_client_leaving_mid_stream_still_records_the_whole_answer(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "left.jsonl"
    upstream = make_server("random", chunk_delay_ms=30)
    url = serve(path, "record", "--upstream", upstream.base_url) + "/chat/completions"
    with httpx.stream("POST", url, json={**CHAT, "stream": True}) as response:
        first = next(response.iter_lines())
    assert first.startswith("data: ")
    whole = httpx.post(url, json=CHAT)  # the server goes on serving
    assert whole.status_code == 200
    url = serve(path, "replay") + "/chat/completions"
    body = httpx.post(url, json={**CHAT, "stream": True}).text
    assert body.rstrip().endswith("data: [DONE]")
    line = next(json.loads(x) for x in path.read_text().splitlines() if '"chunks"' in x)
    assert "incomplete" not in line["meta"]
    assert line["response"]["message"]["content"]


@pytest.fixture
def dying_upstream() -> Iterator[str]:
    """An upstream that answers a stream with two events, then drops the connection."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def run() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(65536)
                event = (
                    b'data: {"id":"c","object":"chat.completion.chunk","created":1,'
                    b'"model":"m","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
                )
                chunk = b"%x\r\n%s\r\n" % (len(event), event)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    b"transfer-encoding: chunked\r\n\r\n" + chunk + chunk
                )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    stop.set()
    thread.join()
    server.close()


def test_an_upstream_dying_mid_stream_is_never_replayed_as_complete(
    serve: Serve, dying_upstream: str, tmp_path: Path
) -> None:
    path = tmp_path / "died.jsonl"
    url = serve(path, "record", "--upstream", dying_upstream) + "/chat/completions"

    def read(target: str) -> list[str]:
        got: list[str] = []
        body = {**CHAT, "stream": True}
        with (
            pytest.raises(httpx.HTTPError),  # the stream is cut, not ended
            httpx.stream("POST", target, json=body) as response,
        ):
            got.extend(line for line in response.iter_lines() if line)
        return got

    live = read(url)
    assert httpx.get(url.replace("/chat/completions", "/models")).status_code >= 400  # alive
    url = serve(path, "replay") + "/chat/completions"
    assert read(url) == live
    assert "data: [DONE]" not in live
