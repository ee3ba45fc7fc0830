"""``cassette demo``: a tool-calling agent recorded through the openai SDK, replayed with no
model; an episode's reward is 1.0 when the answer quotes the ``add`` tool's result."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ..replay.cassette import Cassette
from ..replay.context import episode
from ..types import Json
from .console import Console, plural

__all__ = ["TASKS", "TOOLS", "Transcript", "cassette_chat", "demo", "openai_chat",
           "record_and_replay", "replay_bundled", "run_agent", "show_transcripts"]  # fmt: skip

Chat = Callable[[list[Json]], Json]

TASKS: list[str] = [
    "Add 17 and 25, then tell me the sum.",
    "What do 120 and 45 make together?",
    "Please add 1024 and 7.",
]

_INT = {"type": "integer", "minimum": 0, "maximum": 2000}
_ADD = {"type": "object", "properties": {"a": _INT, "b": _INT}, "required": ["a", "b"]}
TOOLS: list[Json] = [
    {"type": "function",
     "function": {"name": "add", "description": "Add two integers.", "parameters": _ADD}}
]  # fmt: skip

SYSTEM = "You are a careful assistant. Use the add tool for arithmetic, then answer."


@dataclass
class Transcript:
    """One episode: its messages and its reward."""

    env_index: int
    messages: list[Json]
    reward: float


def run_agent(chat: Chat, cas: Cassette, *, max_steps: int = 6) -> list[Transcript]:
    """Run every task as episode ``i`` through ``chat``; outcomes go to ``cas``."""
    results = []
    for env_index, task in enumerate(TASKS):
        with episode(env_index):
            messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]
            results.append(_episode(chat, env_index, messages, max_steps))
            cas.outcome(env_index, reward=results[-1].reward, terminated=True)
    return results


def _episode(chat: Chat, env_index: int, messages: list[Json], max_steps: int) -> Transcript:
    """Ask, run the tools asked for, until the model answers in text."""
    results: list[str] = []
    for _ in range(max_steps):
        messages.append(chat(list(messages)))
        calls = messages[-1].get("tool_calls") or []
        if not calls:
            break
        results += _run_tools(calls, messages)
    answer = str(messages[-1].get("content") or "")
    return Transcript(env_index, messages, 1.0 if results and results[-1] in answer else 0.0)


def _run_tools(calls: list[Json], messages: list[Json]) -> list[str]:
    """Each ``add`` call's result, also appended to ``messages`` as a tool message."""
    results = []
    for call in calls:
        args = json.loads(call["function"]["arguments"])
        results.append(str(int(args.get("a", 0)) + int(args.get("b", 0))))
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": results[-1]})
    return results


def openai_chat(client: Any, model: str) -> Chat:
    """A ``chat`` function over an openai client (wrapped or not)."""

    def chat(messages: list[Json]) -> Json:
        reply = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        message: Json = reply.choices[0].message.model_dump(mode="json", exclude_none=True)
        return message

    return chat


def cassette_chat(cas: Cassette, model: Callable[[Json], Json]) -> Chat:
    """A ``chat`` function that sends requests through ``cas.call`` to ``model``."""

    def chat(messages: list[Json]) -> Json:
        request = {"model": "demo-model", "messages": messages, "tools": TOOLS}
        response = cas.call(request, live=lambda: model(request))
        message: Json = response["choices"][0]["message"]
        return message

    return chat


def _recording_client(stack: Any, live: bool, model: str | None) -> tuple[Any, str, str]:
    """An openai client to record from (closed with ``stack``), its model, and where it is."""
    import openai

    from ..testing.server import ScriptedServer

    if live:
        client = stack.enter_context(openai.OpenAI(max_retries=2))
        return client, model or "gpt-4o-mini", str(client.base_url)
    server = stack.enter_context(ScriptedServer(mode="random"))
    client = openai.OpenAI(base_url=server.base_url, api_key="demo-key", max_retries=0)
    stack.enter_context(client)
    return client, model or "scripted-model", "the scripted model server on 127.0.0.1 (random mode)"


def show_transcripts(console: Console, transcripts: list[Transcript]) -> None:
    """Each episode's reward, then its messages one a line (tool calls as ``name(args)``)."""
    for t in transcripts:
        console.print(f"episode {t.env_index}  reward={t.reward:g}", "bold")
        for message in t.messages:
            text = message.get("content") or ""
            for call in message.get("tool_calls") or []:
                text += f"{call['function']['name']}({call['function']['arguments']})"
            console.print(f"  {message['role']:>9}: {text}")


def replay_bundled(console: Console) -> None:
    """``cassette demo --bundled``: replay the shipped demo cassette with no model."""
    from ..replay.cassette import open as open_cassette
    from ..testing.bundled import bundled

    def no_model(request: Json) -> Json:
        raise AssertionError("replay must not call the model")

    target = bundled("demo")  # a CassetteError: one line, from the group
    with open_cassette(target, mode="replay") as cas:
        if not cas.forced:  # the shipped file is not the user's to re-record
            cas.fix = (
                "the shipped demo cassette does not fit this version's demo agent; "
                "reinstall rollout-cassette, or record a fresh run with `cassette demo`"
            )
        results = run_agent(cassette_chat(cas, no_model), cas)
        served = len(cas.index.entries) - len(cas.unused())
    show_transcripts(console, results)
    console.print(f"replayed {target.name} offline: {plural(served, 'model call')} served, 0 live")


def _not_a_demo(path: Path) -> bool:
    """Whether ``path`` holds anything but an earlier demo recording (header ``meta.demo``)."""
    from ..errors import CassetteError
    from .run import readable_cassette

    if not path.is_file() or path.stat().st_size == 0:
        return path.exists() and not path.is_file()
    try:
        meta = readable_cassette(path).get("meta")
    except (CassetteError, OSError):
        return True
    return not (isinstance(meta, dict) and meta.get("demo") is True)


def _check_out(console: Console, out: str, force: bool) -> None:
    """Refuse an --out that is a URL, a directory, or (unless ``force``) not an earlier demo."""
    from ..storage.remote import is_url

    if is_url(out):  # the demo reads its recording back from a local file
        console.fail(f"--out {out} is a URL; name a local file, e.g. --out demo.jsonl")
    if out.endswith(("/", os.sep)):  # Path() would drop the slash and write a file
        console.fail(f"--out {out} is a directory; name the file, e.g. --out {out}demo.jsonl")
    if not force and _not_a_demo(Path(out)):  # an earlier demo is overwritten
        console.fail(f"{out} exists and is not a demo recording; pass --force to overwrite it")


def _refuse_with_bundled(console: Console, **given: Any) -> None:
    chosen = [f"--{flag}" for flag, value in given.items() if value]
    if chosen:
        console.fail(f"--bundled only replays the shipped cassette; drop {', '.join(chosen)}")


def record_and_replay(console: Console, out: str | None, *, live: bool, model: str | None) -> bool:
    """Record the agent into ``out``, replay it with no model, show it; whether it was the same."""
    import contextlib
    import tempfile
    import time

    import openai

    from ..adapters.openai import wrap_openai
    from ..replay.cassette import open as open_cassette

    path = Path(out) if out else Path(tempfile.mkdtemp(prefix="cassette-demo-")) / "demo.jsonl"
    meta = {"demo": True, "model_source": "live endpoint" if live else "scripted server"}
    try:
        with contextlib.ExitStack() as stack:
            client, model, source = _recording_client(stack, live, model)
            start = time.perf_counter()
            with open_cassette(path, "record", meta=meta) as cas:
                recorded = run_agent(openai_chat(wrap_openai(client, cas), model), cas)
        record_ms, start = (time.perf_counter() - start) * 1000, time.perf_counter()
        # replay: a client whose endpoint is a closed port, so any live call would fail
        offline = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="unused", max_retries=0)
        with offline, open_cassette(path, "replay") as cas:
            replayed = run_agent(openai_chat(wrap_openai(offline, cas), model), cas)
            calls, unused = plural(len(cas.index.entries), "model call"), cas.unused()
        replay_ms = (time.perf_counter() - start) * 1000
    except OSError as exc:
        console.fail(f"cannot write {path}: {exc.strerror or exc}; pick another --out")
    show_transcripts(console, replayed)
    console.print()
    console.print(f"recorded {calls} from {source} ({record_ms:.0f} ms, SDK start-up included)")
    console.print(f"replayed them with no model reachable ({replay_ms:.0f} ms)")
    same = bool(recorded) and recorded == replayed and not unused
    verdict, style = ("identical", "bold green") if same else ("DIFFERENT", "bold red")
    console.print(f"transcripts and rewards: {verdict}", style)
    console.print(f"cassette: {path}")
    return same


@click.command()
@click.option("--live", is_flag=True, help="Record against OPENAI_API_KEY's endpoint instead.")
@click.option("--model", default=None, help="Model name (default: gpt-4o-mini with --live).")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to write the cassette (default: demo.jsonl in a new temporary folder).",
)
@click.option(
    "--force", is_flag=True, help="Overwrite --out even if it holds something other than a demo."
)
@click.option(
    "--bundled",
    is_flag=True,
    help="Only replay the demo cassette shipped with the package, offline.",
)
def demo(live: bool, model: str | None, out: str | None, force: bool, bundled: bool) -> None:
    """Record a tool-calling agent through the real openai SDK, then replay it offline.

    With no API key and no network: records three episodes from the scripted model server
    on 127.0.0.1, stops it, replays the run with no model at all and shows that transcripts
    and rewards are identical. Exit 1 if they are not.

    \b
    Examples:
      cassette demo
      OPENAI_API_KEY=... cassette demo --live --model gpt-4o-mini
      cassette demo --bundled
    """
    console = Console()
    if bundled:
        _refuse_with_bundled(console, live=live, model=model, out=out)
        replay_bundled(console)
        return
    if out:
        _check_out(console, out, force)
    if live and not os.environ.get("OPENAI_API_KEY"):
        console.fail("--live needs OPENAI_API_KEY (and optionally OPENAI_BASE_URL) set")
    sys.exit(int(not record_and_replay(console, out, live=live, model=model)))
