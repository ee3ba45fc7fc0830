"""``cassette serve`` driven by the real openai and anthropic SDKs over HTTP: recorded
against the scripted server, replayed with the upstream stopped and the network cut, and
interchangeable with the Python wrappers' cassettes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

import cassette
from cassette.adapters.openai import wrap_openai

Serve = Callable[..., str]  # the serve fixture (conftest.py)

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-test-serve-0000000000000000000000"


def chat(client: openai.OpenAI, text: str, stream: bool = False) -> Any:
    messages = [{"role": "user", "content": text}]
    if not stream:
        return client.chat.completions.create(model="m", messages=messages).model_dump()
    chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
    return [c.model_dump() for c in chunks]


def conversation(client: openai.OpenAI) -> list[Any]:
    return [
        chat(client, "add 17 and 25"),
        chat(client, "say hi", stream=True),
        client.models.list().model_dump(),
    ]


def test_records_then_replays_with_the_upstream_stopped(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "served.jsonl"
    upstream = make_server("random")
    url = serve(path, "record", "--upstream", upstream.base_url)
    recorded = conversation(openai.OpenAI(base_url=url, api_key=KEY, max_retries=0))
    upstream.stop()
    for _ in range(2):
        url = serve(path, "replay")
        replayed = conversation(openai.OpenAI(base_url=url, api_key=KEY, max_retries=0))
        assert replayed == recorded
    assert KEY not in path.read_text()


def test_a_miss_is_the_providers_error_and_not_retried(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "served.jsonl"
    upstream = make_server("random")
    url = serve(path, "record", "--upstream", upstream.base_url)
    chat(openai.OpenAI(base_url=url, api_key=KEY, max_retries=0), "one")
    url = serve(path, "replay")
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=3)
    with pytest.raises(openai.APIStatusError) as info:
        chat(client, "a question never recorded")
    assert info.value.status_code in (400, 404)
    assert info.value.response.headers["x-should-retry"] == "false"
    assert info.value.body["type"] == "cassette_miss"  # type: ignore[index]
    assert "cassette" in info.value.body["message"]  # type: ignore[index]


def test_a_mismatch_names_the_servers_fixes_and_match_key_serves_it(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "served.jsonl"
    upstream = make_server("random")
    named = {"X-Cassette-Episode": "e1"}

    def client(url: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, default_headers=named)

    recorded = chat(client(serve(path, "record", "--upstream", upstream.base_url)), "one")
    upstream.stop()
    with pytest.raises(openai.APIStatusError) as info:
        chat(client(serve(path, "replay")), "one, edited")
    message = info.value.body["message"]  # type: ignore[index]
    assert info.value.status_code == 400
    assert "restart `cassette serve` with --mode record" in message
    assert "restart `cassette serve` with --match key" in message
    assert "match='key'" not in message  # (a Python argument the server's user cannot pass)
    # the fix, followed: the recording of episode e1's step 0, whatever the request
    assert chat(client(serve(path, "replay", "--match", "key")), "one, edited") == recorded


def test_anthropic_messages_record_and_replay(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "claude.jsonl"
    upstream = make_server("random")
    root = upstream.base_url.removesuffix("/v1")
    url = serve(path, "record", "--anthropic-upstream", root)

    def ask(base: str) -> Any:
        client = anthropic.Anthropic(base_url=base.removesuffix("/v1"), api_key=KEY, max_retries=0)
        hello = [{"role": "user", "content": "hello"}]
        beta = {"anthropic-beta": "tools-2024"}  # (it changes what the model does: matched)
        plain = client.messages.create(
            model="claude", max_tokens=50, messages=hello, extra_headers=beta
        ).model_dump()
        with client.messages.stream(
            model="claude", max_tokens=50, messages=[{"role": "user", "content": "stream"}]
        ) as stream:
            text = "".join(stream.text_stream)
        return plain, text

    recorded = ask(url)
    upstream.stop()
    assert ask(serve(path, "replay")) == recorded
    assert '"$anthropic-beta":"tools-2024"' in path.read_text()


def test_served_cassette_replays_through_wrap_openai_and_back(
    serve: Serve, make_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream = make_server("random")
    served = tmp_path / "served.jsonl"
    url = serve(served, "record", "--upstream", upstream.base_url)
    headers = {"X-Cassette-Episode": "0"}
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, default_headers=headers)
    recorded = [chat(client, "add 17 and 25"), chat(client, "and 3?", stream=True)]
    wrapped_path = tmp_path / "wrapped.jsonl"
    with cassette.open(wrapped_path, mode="record") as cas:
        live = wrap_openai(openai.OpenAI(base_url=upstream.base_url, api_key=KEY), cas)
        wrapped = [chat(live, "add 17 and 25"), chat(live, "and 3?", stream=True)]
    upstream.stop()
    url = serve(wrapped_path, "replay")  # the record server stops: its cassette is written
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, default_headers=headers)
    assert [chat(client, "add 17 and 25"), chat(client, "and 3?", stream=True)] == wrapped

    def no_connect(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("replay opened a connection")

    with monkeypatch.context() as patch:
        patch.setattr(socket.socket, "connect", no_connect)
        with cassette.open(served, mode="replay") as cas:
            offline = wrap_openai(openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="x"), cas)
            again = [chat(offline, "add 17 and 25"), chat(offline, "and 3?", stream=True)]
            assert again == recorded


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/v1/chat/completions", b"{not json", 400),
        ("POST", "/v1/chat/completions", b"[1, 2]", 400),
        ("POST", "/v1/nothing/here", b"{}", 404),
        ("GET", "/v1/chat/completions", b"", 405),
        ("GET", "/cassette/rewind", b"", 405),
    ],
)
def test_malformed_requests_get_an_http_error_and_the_server_lives(
    serve: Serve, empty: Path, method: str, path: str, body: bytes, status: int
) -> None:
    url = serve(empty, "replay").removesuffix("/v1")
    response = httpx.request(method, url + path, content=body)
    assert response.status_code == status
    assert response.headers["x-should-retry"] == "false"
    assert response.json()["error"]["message"]
    assert httpx.get(url + "/v1/models").status_code in (400, 404)  # still serving


def test_named_episodes_replay_again_after_a_rewind(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "named.jsonl"
    upstream = make_server("random")
    url = serve(path, "record", "--upstream", upstream.base_url)

    def run(base: str) -> list[Any]:
        headers = {"X-Cassette-Episode": "task-7"}
        client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, default_headers=headers)
        return [chat(client, "first question"), chat(client, "second question")]

    recorded = run(url)
    upstream.stop()
    url = serve(path, "replay")
    assert run(url) == recorded
    with pytest.raises(openai.NotFoundError):  # the episode's steps are used up
        run(url)
    root = url.removesuffix("/v1")
    assert httpx.post(root + "/cassette/rewind").json() == {"rewound": True}
    assert run(url) == recorded


def test_an_upstream_error_is_replayed_as_the_same_http_response(
    serve: Serve, make_server: Any, tmp_path: Path
) -> None:
    path = tmp_path / "errors.jsonl"
    spec = {"status": 429, "message": "slow down", "headers": {"retry-after": "7"}}
    upstream = make_server("random", errors={1: spec})
    url = serve(path, "record", "--upstream", upstream.base_url)

    def fail(base: str) -> tuple[int, Any, str | None]:
        client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0)
        with pytest.raises(openai.RateLimitError) as info:
            chat(client, "please answer")
        return (
            info.value.status_code,
            info.value.body,
            info.value.response.headers.get("retry-after"),
        )

    recorded = fail(url)
    assert recorded[0] == 429 and recorded[2] == "7"
    upstream.stop()
    assert fail(serve(path, "replay")) == recorded


def test_an_upstream_not_running_is_named_with_the_flag_that_moves_it(
    serve: Serve, tmp_path: Path
) -> None:
    with socket.socket() as sock:  # a port just freed: nothing listens
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    url = serve(tmp_path / "c.jsonl", "record", "--upstream", dead + "/v1")
    with pytest.raises(openai.InternalServerError) as info:
        chat(openai.OpenAI(base_url=url, api_key=KEY, max_retries=0), "hello")
    assert info.value.status_code == 502
    said = info.value.body["message"]  # type: ignore[index]
    fix = "start it, or set --upstream (or $OPENAI_BASE_URL) to one that runs"
    assert said == f"{dead} could not be reached; {fix}"


def test_another_host_needs_a_token_and_clients_must_send_it(
    serve: Serve, tmp_path: Path, empty: Path
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cassette", "serve", "--cassette", str(tmp_path / "c.jsonl"),
         "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stderr.count("error:") == 1
    assert "--token" in proc.stderr
    url = serve(empty, "replay", "--token", "s3cret-token")
    denied = httpx.post(url + "/chat/completions", json={"model": "m", "messages": []})
    assert denied.status_code == 401 and denied.headers["x-should-retry"] == "false"
    allowed = httpx.post(
        url + "/chat/completions",
        json={"model": "m", "messages": []},
        headers={"X-Cassette-Token": "s3cret-token"},
    )
    assert allowed.status_code == 404  # let in: a miss, as nothing is recorded
