"""`cassette run --cassette`: litellm and Azure clients under zero-code recording (apart
from test_cli_run_auto.py so that the two files run on two workers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cassette.storage.index import load_index
from tests.helpers.autorecord import NOWHERE, cassette_run
from tests.helpers.chat import MakeServer


@pytest.mark.slow
def test_litellm_calls_record_once_and_replay(make_server: MakeServer, tmp_path: Path) -> None:
    pytest.importorskip("litellm")
    server = make_server("random")
    path = tmp_path / "e.jsonl"
    code = (
        "import sys, litellm\n"
        "for t in ('one', 'two'):\n"
        "    r = litellm.completion(model='openai/gpt-test', api_base=sys.argv[1], api_key='k',"
        " messages=[{'role': 'user', 'content': t}])\n"
        "    print(r.choices[0].message.content)\n"
    )
    command = ["--", sys.executable, "-c", code]
    recorded = cassette_run("--mode", "record", "--cassette", str(path), *command, server.base_url)
    assert recorded.returncode == 0, recorded.stderr
    server.stop()
    entries = load_index([path]).entries
    assert len(entries) == 2  # litellm's call only, not the openai SDK call inside it
    replayed = cassette_run("--mode", "replay", "--cassette", str(path), *command, NOWHERE + "/v1")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout


def test_azure_clients_are_recorded_too(make_server: MakeServer, tmp_path: Path) -> None:
    server = make_server("random")
    path = tmp_path / "g.jsonl"
    code = (
        "import asyncio, sys\n"
        "from openai import AsyncAzureOpenAI, AzureOpenAI\n"
        "kw = dict(base_url=sys.argv[1], api_key='k', api_version='2024-10-21', max_retries=0)\n"
        "ask = [{'role': 'user', 'content': 'hi'}]\n"
        "r = AzureOpenAI(**kw).chat.completions.create(model='dep', messages=ask)\n"
        "async def main():\n"
        "    c = AsyncAzureOpenAI(**kw)\n"
        "    r = await c.chat.completions.create(model='dep', messages=ask + ask)\n"
        "    await c.close()\n"
        "    return r\n"
        "print(r.choices[0].message.content, asyncio.run(main()).choices[0].message.content)\n"
    )
    command = ["--", sys.executable, "-c", code, server.base_url]
    recorded = cassette_run("--mode", "record", "--cassette", str(path), *command)
    assert recorded.returncode == 0, recorded.stderr
    assert server.request_count == 2
    server.stop()
    assert len(load_index([path]).entries) == 2
    replayed = cassette_run("--mode", "replay", "--cassette", str(path), *command)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout


# two calls, then: a clean end ("ok"), an uncaught exception ("error") or Ctrl-C ("ctrl-c")
ENDINGS = """
import os, signal, sys
from openai import OpenAI
client = OpenAI(base_url=sys.argv[1], api_key="sk-any", max_retries=0)
for n in range(2):
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"{n}"}])
client.close()
if sys.argv[2] == "ctrl-c":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.kill(os.getpid(), signal.SIGINT)
if sys.argv[2] != "ok":
    raise RuntimeError("the eval broke")
"""


@pytest.mark.parametrize(("ending", "code"), [("error", 1), ("ctrl-c", 130)])
def test_a_re_record_that_dies_leaves_the_old_cassette_untouched(
    make_server: MakeServer, tmp_path: Path, ending: str, code: int
) -> None:
    """As after an exception in a `with cassette.open(...)` block: the program's calls are
    kept in the side file, which the last line names, and the cassette is the old one (it
    used to be replaced by the two calls of the broken run, at exit)."""
    server = make_server("random")
    path = tmp_path / "e.jsonl"
    command = ["--mode", "record", "--cassette", str(path), "--", sys.executable, "-c", ENDINGS]
    first = cassette_run(*command, server.base_url, "ok")
    assert first.returncode == 0, first.stderr
    before = path.read_bytes()
    broken = cassette_run(*command, server.base_url, ending)
    assert broken.returncode == code, broken.stderr
    assert path.read_bytes() == before
    (side,) = tmp_path.glob("e.jsonl.*.partial")
    assert broken.stderr.splitlines()[-1] == (
        f"cassette: {path} was left untouched; what this run recorded is in {side} (open it "
        "with mode='replay' to inspect)"
    )
    assert len(load_index([side]).entries) == 2


def test_a_program_that_imports_the_adapter_first_is_recorded(
    make_server: MakeServer, tmp_path: Path
) -> None:
    server = make_server("random")
    path = tmp_path / "h.jsonl"
    code = (
        "import sys\n"
        "from cassette.adapters.openai import wrap_openai  # imports openai while the hook is on\n"
        "from openai import OpenAI\n"
        "c = OpenAI(base_url=sys.argv[1], api_key='k', max_retries=0)\n"
        "r = c.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'hi'}])\n"
        "print(callable(wrap_openai), r.choices[0].message.content)\n"
    )
    command = ["--", sys.executable, "-c", code]
    recorded = cassette_run("--mode", "record", "--cassette", str(path), *command, server.base_url)
    assert recorded.returncode == 0, recorded.stderr
    assert len(load_index([path]).entries) == 1
    server.stop()
    replayed = cassette_run("--mode", "replay", "--cassette", str(path), *command, NOWHERE + "/v1")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout


def test_a_replay_needs_no_api_key(
    make_server: MakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server("random")
    path = tmp_path / "k.jsonl"
    code = (
        "import sys\n"
        "from openai import OpenAI\n"
        "c = OpenAI(base_url=sys.argv[1], max_retries=0)  # the key from OPENAI_API_KEY\n"
        "r = c.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'hi'}])\n"
        "print(r.choices[0].message.content)\n"
    )
    command = ["--", sys.executable, "-c", code]
    with_key = {"OPENAI_API_KEY": "sk-test-key"}
    recorded = cassette_run(
        "--mode", "record", "--cassette", str(path), *command, server.base_url, env=with_key
    )
    assert recorded.returncode == 0, recorded.stderr
    server.stop()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # CI: no key at all
    replayed = cassette_run("--mode", "replay", "--cassette", str(path), *command, NOWHERE + "/v1")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == recorded.stdout
