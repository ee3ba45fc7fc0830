"""Worker of bench/bench_openai.py: times one agent loop in one Python environment.

    python bench/_openai_worker.py --base-url URL [--episodes 50 --steps 10 --repeats 3]

Runs in whichever environment starts it (openai 3.x on ``httpx2``, or the benchmark venv's
openai 2.x on ``httpx``) and prints one JSON object on the last line of stdout: versions,
the seconds of every repeat of every run, and the correctness checks. Progress goes to
stderr. The runs, each of the same loop through ``client.chat.completions.create``:

live             against the scripted server, plain SDK client
ours_record      ``wrap_openai`` + ``cassette.open(path, "record")``, ``cassette.episode(i)``
ours_replay      ``cassette.open(path, "replay")``; the client points at a closed port
sdk_transform    only the SDK's ``maybe_transform`` of every request of the run (what the
                 live SDK spends on building a request body)
vcr_record       inside ``vcr.use_cassette``, one new cassette per episode
vcr_replay       ``record_mode="none"``, vcrpy's default ``match_on``
vcr_replay_body  the same with ``"body"`` added to ``match_on``

A timed run includes opening and closing its cassettes (vcrpy reads and writes YAML
there); besides its total, each run keeps its segments (the time outside episodes, then
each episode). The runs are interleaved repeat by repeat, so that a busy moment of the
machine hits all of them alike. Without vcrpy only the first four run. Then: replays
checked against the recording, vcrpy with one cassette for a few episodes, and (on
``httpx2``, or with --probe-only) whether vcrpy sees this openai's requests at all.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # fixtures/ is not installed with the package
    sys.path.insert(0, str(ROOT))

import openai  # noqa: E402
from _common import TOOLS  # noqa: E402
from openai._utils import maybe_transform  # noqa: E402
from openai.types.chat.completion_create_params import (  # noqa: E402
    CompletionCreateParamsNonStreaming,
)

import cassette  # noqa: E402
from cassette.adapters.openai import wrap_openai  # noqa: E402

try:
    import vcr  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # the main environment may not have it
    vcr = None

Json = dict[str, Any]
MODEL = "gpt-4o-mini"
API_KEY = "sk-fake-bench-key-00000000000000000000"
DEAD_URL = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
DEFAULT_MATCH = ("method", "scheme", "host", "port", "path", "query")
BODY_MATCH = (*DEFAULT_MATCH, "body")
EDIT = " Also, the parcel is late."
SINGLE = 4  # episodes in the one-cassette-for-the-run vcrpy demonstration
SYSTEM = (
    "You are a careful support agent for an online shop. Look every order up with the "
    "tools before you answer, quote the tool's result, and keep answers short. Never "
    "guess a status; if a tool fails, say so and try again with a narrower query."
)


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _version(dist: str) -> str | None:
    try:
        return dist_version(dist)
    except PackageNotFoundError:
        return None


# --- the agent loop ----------------------------------------------------------------------


def task(ep: int, edit: str = "") -> str:
    return f"Episode {ep}: where is order #{1000 + ep}? The customer asked twice.{edit}"


def _call(c: Any) -> Json:
    return {
        "id": c.id,
        "type": "function",
        "function": {"name": c.function.name, "arguments": c.function.arguments},
    }


def run_loop(
    client: Any,
    episodes: list[int],
    steps: int,
    episode: Callable[[int], Any] = contextlib.nullcontext,
    edit: str = "",
    calls: list[Json] | None = None,
    marks: list[float] | None = None,
) -> list[Any]:
    """The agent loop: per episode a system prompt and a task, then ``steps`` calls; each
    step appends the assistant message and a tool result (after a tool call) or a user
    message. Returns the SDK's response objects in call order; ``calls`` gets the keyword
    arguments of every call, ``marks`` the seconds of every episode."""
    create = client.chat.completions.create
    clock = time.perf_counter
    out: list[Any] = []
    for ep in episodes:
        t0 = clock()
        messages: list[Json] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": task(ep, edit)},
        ]
        with episode(ep):
            for step in range(steps):
                kwargs: Json = {
                    "model": MODEL,
                    "messages": messages,
                    "tools": TOOLS,
                    "temperature": 0,
                }
                if calls is not None:
                    calls.append({**kwargs, "messages": list(messages)})
                resp = create(**kwargs)
                out.append(resp)
                msg = resp.choices[0].message
                said: Json = {"role": "assistant", "content": msg.content}
                if msg.tool_calls:
                    said["tool_calls"] = [_call(c) for c in msg.tool_calls]
                messages.append(said)
                if msg.tool_calls:
                    result = f"order #{1000 + ep}: shipped on day {step}, 3 items, no returns"
                    messages.append(
                        {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": result}
                    )
                else:
                    messages.append(
                        {"role": "user", "content": f"Thanks. Step {step}: check it once more."}
                    )
        if marks is not None:
            marks.append(clock() - t0)
    return out


def dumps(responses: list[Any]) -> list[Json]:
    return [r.model_dump(mode="json") for r in responses]


def same(got: list[Json], want: list[Json], ignore: tuple[str, ...] = ()) -> int:
    """How many responses equal the expected ones, position by position."""

    def strip(r: Json) -> Json:
        return {k: v for k, v in r.items() if k not in ignore}

    return sum(strip(g) == strip(w) for g, w in zip(got, want, strict=False))


def reorder(responses: list[Json], order: list[int], steps: int) -> list[Json]:
    """The responses of a run in episode order 0..n-1, rearranged into ``order``."""
    return [r for ep in order for r in responses[ep * steps : (ep + 1) * steps]]


# --- the runs ----------------------------------------------------------------------------


class Bench:
    def __init__(self, base_url: str, episodes: int, steps: int, tmp: Path) -> None:
        self.steps, self.tmp = steps, tmp
        self.order = list(range(episodes))
        self.client = make_client(base_url)
        self.dead = make_client(DEAD_URL)
        self.times: dict[str, list[float]] = {}
        self.segments: dict[str, list[list[float]]] = {}
        self.label = ""
        self._n = 0

    def timed(self, name: str, fn: Callable[..., list[Any]]) -> list[Any]:
        """Run ``fn(marks=marks)`` once; keep its seconds, and its segments: what was not spent
        in an episode (opening and closing a cassette), then each episode."""
        marks: list[float] = []
        gc.collect()
        t0 = time.perf_counter()
        out = fn(marks=marks)
        total = time.perf_counter() - t0
        self.times.setdefault(name, []).append(total)
        self.segments.setdefault(name, []).append([total - sum(marks), *marks])
        return out

    def fresh(self, stem: str) -> Path:
        self._n += 1
        return self.tmp / f"{stem}-{self._n}"

    def live(self, marks: list[float] | None = None) -> list[Any]:
        return run_loop(self.client, self.order, self.steps, marks=marks)

    def ours(
        self,
        path: Path,
        mode: str,
        order: list[int] | None = None,
        edit: str = "",
        marks: list[float] | None = None,
    ) -> list[Any]:
        client = self.client if mode == "record" else self.dead
        order = order or self.order
        with cassette.open(path, mode) as cas:
            wrapped = wrap_openai(client, cas)
            return run_loop(wrapped, order, self.steps, cassette.episode, edit, marks=marks)

    def vcr(
        self,
        where: Path,
        record: bool = False,
        match_on: tuple[str, ...] = DEFAULT_MATCH,
        order: list[int] | None = None,
        edit: str = "",
        marks: list[float] | None = None,
    ) -> list[Any]:
        """The loop under vcrpy: ``where`` a folder gets one cassette per episode (as one
        test per episode would), a ``.yaml`` path one cassette for the whole loop."""
        assert vcr is not None
        tapes = vcr.VCR(
            record_mode="once" if record else "none",
            match_on=match_on,
            filter_headers=["authorization"],
        )
        order = order or self.order
        if where.suffix == ".yaml":
            with tapes.use_cassette(str(where)):
                return run_loop(self.client, order, self.steps, edit=edit, marks=marks)

        def episode(ep: int) -> Any:
            return tapes.use_cassette(str(where / f"episode-{ep}.yaml"))

        return run_loop(self.client, order, self.steps, episode, edit, marks=marks)

    def transform(self, calls: list[Json], marks: list[float]) -> list[Any]:
        """The SDK's maybe_transform of every request, timed per episode."""
        out = []
        clock = time.perf_counter
        for i in range(0, len(calls), self.steps):
            t0 = clock()
            out += [
                maybe_transform(k, CompletionCreateParamsNonStreaming)
                for k in calls[i : i + self.steps]
            ]
            marks.append(clock() - t0)
        return out


def make_client(base_url: str) -> Any:
    return openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)


def http_library(client: Any) -> str:
    """``httpx`` or ``httpx2``: the HTTP library that this openai is built on."""
    for cls in type(client._client).__mro__:
        top = cls.__module__.split(".")[0]
        if top.startswith("httpx"):
            return top
    return "?"


def probe(call: Callable[[], list[Any]], want: list[Json]) -> Json:
    """A replay that may fail: how many responses it served, how many of them were the
    expected ones, and what it raised."""
    try:
        got = dumps(call())
    except Exception as exc:  # noqa: BLE001 - what is raised is the finding
        return {"served": None, "right": None, "raised": _name(exc)}
    return {"served": len(got), "right": same(got, want), "raised": None}


def _name(exc: BaseException) -> str:
    """The exception's type, and the type it was raised from (openai 2.x wraps what its
    transport raises in APIConnectionError)."""
    cause = exc.__cause__
    return type(exc).__name__ + (f" from {type(cause).__name__}" if cause else "")


def vcr_httpx2_probe(tmp: Path) -> Json:
    """Can vcrpy record this openai at all? Record 3 calls against an in-process server,
    replay them: what the cassette holds and how many requests reached the server."""
    from cassette.testing.server import ScriptedServer

    assert vcr is not None
    path = tmp / "probe.yaml"
    found: Json = {}
    with ScriptedServer(mode="script", record_requests=False) as server:
        client = make_client(server.base_url)
        messages = [{"role": "user", "content": "probe"}]
        with vcr.VCR(record_mode="once").use_cassette(str(path)) as tape:
            for _ in range(3):
                client.chat.completions.create(model=MODEL, messages=messages)
            found["recorded"] = len(tape.data)
        found["hits_record"] = server.request_count
        found["file"] = path.exists()
        before = server.request_count
        try:
            with vcr.VCR(record_mode="none").use_cassette(str(path)) as tape:
                for _ in range(3):
                    client.chat.completions.create(model=MODEL, messages=messages)
                found["played"] = tape.play_count
            found["raised"] = None
        except Exception as exc:  # noqa: BLE001 - what is raised is the finding
            found["played"], found["raised"] = 0, _name(exc)
        found["hits_replay"] = server.request_count - before
    return found


def measure(b: Bench, repeats: int) -> dict[str, list[Json]]:
    """The timed runs, interleaved; returns the responses of the first run of each."""
    first: dict[str, list[Json]] = {}

    def timed(name: str, fn: Callable[..., list[Any]]) -> None:
        got = b.timed(name, fn)
        first.setdefault(name, dumps(got))

    calls: list[Json] = []
    run_loop(b.client, b.order, b.steps, calls=calls)
    for i in range(repeats):
        log(f"{b.label}: repeat {i + 1}/{repeats}")
        timed("live", b.live)
        path = b.tmp / "ours.jsonl" if i == 0 else b.fresh("ours.jsonl")
        timed("ours_record", partial(b.ours, path, "record"))
        timed("ours_replay", partial(b.ours, b.tmp / "ours.jsonl", "replay"))
        b.timed("sdk_transform", partial(b.transform, calls))
        if vcr is None:
            continue
        folder = b.tmp / "vcr" if i == 0 else b.fresh("vcr")
        folder.mkdir()
        timed("vcr_record", partial(b.vcr, folder, record=True))
        timed("vcr_replay", partial(b.vcr, b.tmp / "vcr"))
        timed("vcr_replay_body", partial(b.vcr, b.tmp / "vcr", match_on=BODY_MATCH))
    return first


def check(b: Bench, first: dict[str, list[Json]]) -> Json:
    """Replays against what was recorded: the timed run itself, the episodes in reverse
    order (keys right, order not), and episode 0 with its task edited (never recorded)."""
    reverse = b.order[::-1]
    checks: Json = {"calls": len(first["live"])}
    # the scripted server is deterministic but for "created" (its clock)
    rec = first["ours_record"]
    checks["ours_record_vs_live"] = same(rec, first["live"], ("created",))
    checks["ours_same"] = same(first["ours_replay"], rec)
    tape = b.tmp / "ours.jsonl"
    checks["ours_reversed"] = probe(
        partial(b.ours, tape, "replay", reverse), reorder(rec, reverse, b.steps)
    )
    checks["ours_edited"] = probe(partial(b.ours, tape, "replay", [0], EDIT), rec)
    if vcr is None:
        return checks
    rec = first["vcr_record"]
    checks["vcr_record_vs_live"] = same(rec, first["live"], ("created",))
    folder = b.tmp / "vcr"
    for name, match in (("vcr", DEFAULT_MATCH), ("vcr_body", BODY_MATCH)):
        checks[f"{name}_same"] = same(first[name.replace("vcr", "vcr_replay")], rec)
        checks[f"{name}_edited"] = probe(
            partial(b.vcr, folder, match_on=match, order=[0], edit=EDIT), rec
        )
    return checks


def single_cassette(b: Bench) -> Json:
    """vcrpy with one cassette for the first SINGLE episodes: seconds per call of each
    replay, and the episodes replayed in reverse order under the default matchers."""
    small = Bench.__new__(Bench)
    small.__dict__.update(vars(b), order=b.order[:SINGLE], times={}, segments={})
    path = b.tmp / "single.yaml"
    rec = dumps(small.vcr(path, record=True))
    calls = len(rec)
    out: Json = {"episodes": len(small.order), "calls": calls}
    for name, match in (("default", DEFAULT_MATCH), ("body", BODY_MATCH)):
        got = dumps(small.timed(name, partial(small.vcr, path, match_on=match)))
        out[f"{name}_per_call"] = small.times[name][0] / calls
        out[f"{name}_same"] = same(got, rec)
    reverse = small.order[::-1]
    out["default_reversed"] = probe(
        partial(small.vcr, path, order=reverse), reorder(rec, reverse, b.steps)
    )
    return out


# --- the agent workload (issue 10): replay cost per call, the floors, wrap cost ---------

AGENT_SYSTEM = (
    "You are a careful support agent for an online shop. Look every order up with the tools "
    "before you answer, quote the tool's result, and keep answers short. Never guess a "
    "status; if a tool fails, say so and try again with a narrower query. Be polite. "
) * 3


def agent_kwargs(messages: list[Json], step: int) -> Json:
    """The arguments of one call: a tool call is offered every third step."""
    return {
        "model": MODEL,
        "messages": messages,
        "tools": TOOLS,
        "temperature": 0,
        "tool_choice": "auto" if step % 3 == 0 else "none",
    }


def said_of(resp: Any) -> Json:
    """The assistant message of a reply (a ChatCompletion), as the agent resends it."""
    msg = resp.choices[0].message
    said: Json = {"role": "assistant", "content": msg.content}
    if msg.tool_calls:
        said["tool_calls"] = [_call(c) for c in msg.tool_calls]
    return said


def said_of_chunks(chunks: list[Any]) -> Json:
    """The assistant message of a streamed reply, assembled from its chunks."""
    content, calls = "", {}
    for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            content += delta.content or ""
            for tc in delta.tool_calls or ():
                call = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += tc.id or ""
                call["name"] += (tc.function and tc.function.name) or ""
                call["arguments"] += (tc.function and tc.function.arguments) or ""
    said: Json = {"role": "assistant", "content": content or None}
    if calls:
        said["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(calls.items())
        ]  # fmt: skip
    return said


def follow_up(messages: list[Json], said: Json, ep: int, step: int) -> None:
    """Append the assistant message, then a tool result (after a tool call) or a user
    follow-up."""
    messages.append(said)
    calls = said.get("tool_calls")
    if calls:
        result = f"order #{1000 + ep}: shipped on day {step}, 3 items, no returns. "
        messages.append({"role": "tool", "tool_call_id": calls[0]["id"], "content": result * 4})
    else:
        follow = f"Thanks. Step {step}: check it once more and name the carrier. "
        messages.append({"role": "user", "content": follow * 3})


def opening(ep: int) -> list[Json]:
    return [{"role": "system", "content": AGENT_SYSTEM}, {"role": "user", "content": task(ep)}]


def agent_loop(
    client: Any,
    episodes: list[int],
    steps: int,
    episode: Callable[[int], Any] = contextlib.nullcontext,
    raw: bool = False,
    marks: list[float] | None = None,
    sizes: list[int] | None = None,
    stream: bool = False,
) -> list[Any]:
    """The agent of the issue: per episode a system prompt and a task, then ``steps``
    calls, the whole growing conversation resent each time; a tool call every third reply
    (``tool_choice`` "auto" on steps 0, 3, 6, 9, else "none"), a tool result after it,
    else a user follow-up. ``raw``: through ``with_raw_response.create(...).parse()``;
    ``stream``: ``create(..., stream=True)``, its chunks read in the call's time, the
    message assembled outside it. ``marks`` gets the seconds spent in calls of each
    episode, ``sizes`` request bytes. Returns each reply as :func:`kept` bytes, made outside
    the timed span: like a real agent, the loop keeps the messages it resends, not the SDK's
    objects (the floors keep none either)."""
    completions = client.chat.completions
    create = completions.with_raw_response.create if raw else completions.create
    clock = time.perf_counter
    out: list[Any] = []
    for ep in episodes:
        spent = 0.0
        messages = opening(ep)
        with episode(ep):
            for step in range(steps):
                kwargs = agent_kwargs(messages, step)
                if sizes is not None:
                    sizes.append(len(json.dumps(kwargs, separators=(",", ":"))))
                t0 = clock()
                if stream:
                    resp: Any = list(create(**kwargs, stream=True))
                elif raw:
                    resp = create(**kwargs).parse()
                else:
                    resp = create(**kwargs)
                spent += clock() - t0
                out.append(kept(resp))
                follow_up(messages, said_of_chunks(resp) if stream else said_of(resp), ep, step)
        if marks is not None:
            marks.append(spent)
    return out


async def agent_loop_async(
    client: Any,
    episodes: list[int],
    steps: int,
    episode: Callable[[int], Any] = contextlib.nullcontext,
    marks: list[float] | None = None,
) -> list[Any]:
    """:func:`agent_loop` through an ``AsyncOpenAI`` client's ``create`` (replies kept
    as :func:`kept` bytes)."""
    create = client.chat.completions.create
    clock = time.perf_counter
    out: list[Any] = []
    for ep in episodes:
        spent = 0.0
        messages = opening(ep)
        with episode(ep):
            for step in range(steps):
                kwargs = agent_kwargs(messages, step)
                t0 = clock()
                resp = await create(**kwargs)
                spent += clock() - t0
                out.append(kept(resp))
                follow_up(messages, said_of(resp), ep, step)
        if marks is not None:
            marks.append(spent)
    return out


def kept(resp: Any) -> bytes:
    """What the agent loop keeps of a reply for the check after the run: its JSON dump as
    bytes (a stream's chunks as a list of dumps). Bytes give the garbage collector nothing
    to walk, so a replay row and its floor, which keeps nothing, retain the same."""
    import orjson

    dump = dumps(resp) if isinstance(resp, list) else resp.model_dump(mode="json")
    return orjson.dumps(dump)


def recorded(path: Path, field: str | None = None) -> dict[int, bytes]:
    """Each interaction's response as JSON bytes (or its ``field``), in file order: what a
    floor parses."""
    import orjson

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    found = [line["response"] for line in lines if line.get("type") == "interaction"]
    return {i: orjson.dumps(r[field] if field else r) for i, r in enumerate(found)}


def _hash(request: Json) -> str:
    import hashlib

    import orjson

    return hashlib.sha256(orjson.dumps(request, option=orjson.OPT_SORT_KEYS)).hexdigest()


def agent_floor(path: Path, calls: list[Json], steps: int) -> list[float]:
    """What any replay must do per call, and no more: parse the recorded reply (orjson),
    find it (a dict lookup), validate it into the SDK type (pydantic), and hash the request
    (orjson with sorted keys + sha256). Seconds for each episode's calls."""
    import orjson
    from openai.types.chat import ChatCompletion
    from pydantic import TypeAdapter

    adapter = TypeAdapter(ChatCompletion)
    stored = recorded(path)
    marks = []
    for start in range(0, len(calls), steps):
        t0 = time.perf_counter()
        for i in range(start, min(start + steps, len(calls))):
            _hash(calls[i])
            adapter.validate_python(orjson.loads(stored[i]))
        marks.append(time.perf_counter() - t0)
    return marks


def stream_floor(path: Path, calls: list[Json], steps: int) -> list[float]:
    """:func:`agent_floor` for streams: the recorded chunks parsed (one orjson pass over
    the list), each validated into a ``ChatCompletionChunk``."""
    import orjson
    from openai.types.chat import ChatCompletionChunk
    from pydantic import TypeAdapter

    validate = TypeAdapter(ChatCompletionChunk).validate_python
    stored = recorded(path, "chunks")
    marks = []
    for start in range(0, len(calls), steps):
        t0 = time.perf_counter()
        for i in range(start, min(start + steps, len(calls))):
            _hash(calls[i])
            [validate(chunk) for chunk in orjson.loads(stored[i])]
        marks.append(time.perf_counter() - t0)
    return marks


def async_floor(path: Path, calls: list[Json], steps: int) -> list[float]:
    """:func:`agent_floor` with each call's work in a coroutine awaited by the loop."""
    import asyncio

    import orjson
    from openai.types.chat import ChatCompletion
    from pydantic import TypeAdapter

    adapter = TypeAdapter(ChatCompletion)
    stored = recorded(path)

    async def one(i: int) -> Any:
        _hash(calls[i])
        return adapter.validate_python(orjson.loads(stored[i]))

    async def run() -> list[float]:
        marks = []
        for start in range(0, len(calls), steps):
            t0 = time.perf_counter()
            for i in range(start, min(start + steps, len(calls))):
                await one(i)
            marks.append(time.perf_counter() - t0)
        return marks

    return asyncio.run(run())


WRAP_PROBE = """
import sys, time
t0 = time.perf_counter()
import openai, cassette
from cassette.adapters.openai import wrap_openai
client = openai.OpenAI(api_key="sk-fake", base_url="http://127.0.0.1:9/v1", max_retries=0)
t1 = time.perf_counter()
cas = cassette.open(sys.argv[1], "replay")
t2 = time.perf_counter()
wrapped = wrap_openai(client, cas)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def wrap_cost(path: Path, runs: int = 3) -> Json:
    """In fresh processes: seconds to import openai and make a client, to open the
    cassette, and to wrap the client (medians)."""
    import statistics
    import subprocess

    found = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", WRAP_PROBE, str(path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout.split()
        found.append([float(x) for x in out])
    imp, opened, wrap = (statistics.median(col) for col in zip(*found, strict=True))
    return {"import": imp, "open": opened, "wrap": wrap}


def requests_of(path: Path, dead: Any, order: list[int], steps: int, stream: bool) -> list[Json]:
    """The request dicts of a replay of ``path``, as the adapter builds them (what a floor
    hashes)."""
    from cassette.adapters.openai._request import build_request

    calls: list[Json] = []
    with cassette.open(path, "replay") as cas:
        wrapped = wrap_openai(dead, cas)
        spy = wrapped.chat.completions.create

        def record_call(**kwargs: Any) -> Any:
            calls.append(json.loads(json.dumps(build_request("c", None, kwargs))))
            return spy(**kwargs)

        vars(wrapped.chat.completions)["create"] = record_call
        agent_loop(wrapped, order, steps, cassette.episode, stream=stream)
    return calls


def agent_bench(base_url: str, episodes: int, steps: int, repeats: int, tmp: Path) -> Json:
    """The agent workload, runs interleaved ``repeats`` times: live and replay through
    ``create``, live and replay through ``with_raw_response.create``, replay through
    ``create(stream=True)`` and through ``AsyncOpenAI``; the floor of each replay; the
    wrap cost in fresh processes. Seconds spent in calls, per run."""
    import asyncio

    import orjson

    client, dead = make_client(base_url), make_client(DEAD_URL)
    adead = openai.AsyncOpenAI(base_url=DEAD_URL, api_key=API_KEY, max_retries=0)
    order = list(range(episodes))
    path, spath = tmp / "agent.jsonl", tmp / "agent-stream.jsonl"
    sizes: list[int] = []
    want: dict[str, list[Any]] = {}
    with cassette.open(path, "record") as cas:
        want["create"] = agent_loop(wrap_openai(client, cas), order, steps, cassette.episode)
    with cassette.open(spath, "record") as cas:
        wrapped = wrap_openai(client, cas)
        want["stream"] = agent_loop(wrapped, order, steps, cassette.episode, stream=True)
    agent_loop(client, order[:1], steps, sizes=sizes)
    calls = requests_of(path, dead, order, steps, False)
    scalls = requests_of(spath, dead, order, steps, True)
    times: dict[str, list[list[float]]] = {}  # per run, the seconds of each episode's calls
    same: dict[str, int] = {}

    def timed(name: str, fn: Callable[..., list[Any]], kind: str = "create") -> None:
        marks: list[float] = []
        gc.collect()
        out = fn(marks=marks)
        times.setdefault(name, []).append(marks)
        same.setdefault(name, sum(a == b for a, b in zip(out, want[kind], strict=False)))

    def floor(name: str, fn: Callable[[Path, list[Json], int], list[float]], *args: Any) -> None:
        gc.collect()
        times.setdefault(name, []).append(fn(*args, steps))

    def replay(marks: list[float], raw: bool = False, stream: bool = False) -> list[Any]:
        with cassette.open(spath if stream else path, "replay") as cas:
            wrapped = wrap_openai(dead, cas)
            return agent_loop(
                wrapped, order, steps, cassette.episode, raw=raw, marks=marks, stream=stream
            )

    def areplay(marks: list[float]) -> list[Any]:
        async def run() -> list[Any]:
            async with cassette.open(path, "replay") as cas:
                wrapped = wrap_openai(adead, cas)
                return await agent_loop_async(wrapped, order, steps, cassette.episode, marks)

        return asyncio.run(run())

    for i in range(repeats):
        log(f"agent workload: repeat {i + 1}/{repeats}")
        timed("live", partial(agent_loop, client, order, steps))
        timed("replay", replay)
        floor("floor", agent_floor, path, calls)
        timed("live_raw", partial(agent_loop, client, order, steps, raw=True))
        timed("replay_raw", partial(replay, raw=True))
        timed("replay_stream", partial(replay, stream=True), "stream")
        floor("floor_stream", stream_floor, spath, scalls)
        timed("replay_async", areplay)
        floor("floor_async", async_floor, path, calls)
    return {
        "calls": len(want["create"]),
        "chunks": sum(len(orjson.loads(r)) for r in want["stream"]),
        "request_bytes": sum(sizes) / len(sizes),
        "tool_calls": sum(
            bool(orjson.loads(r)["choices"][0]["message"].get("tool_calls")) for r in want["create"]
        ),
        "times": times,
        "same": same,
        "wrap": wrap_cost(path),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--probe-only", action="store_true", help="only the httpx2 probe")
    parser.add_argument("--agent", action="store_true", help="only the agent workload")
    args = parser.parse_args()
    if args.agent:
        with tempfile.TemporaryDirectory(prefix="cassette-bench-agent-") as tmp_name:
            found = agent_bench(
                args.base_url, args.episodes, args.steps, args.repeats, Path(tmp_name)
            )
        found["openai"] = openai.__version__
        found["http"] = http_library(make_client(DEAD_URL))
        print(json.dumps(found))
        return

    with tempfile.TemporaryDirectory(prefix="cassette-bench-openai-") as tmp_name:
        tmp = Path(tmp_name)
        b = Bench(args.base_url, args.episodes, args.steps, tmp)
        lib = http_library(b.client)
        result: Json = {
            "openai": openai.__version__,
            "http": lib,
            "http_version": _version(lib),
            "vcrpy": _version("vcrpy") if vcr is not None else None,
            "python": sys.version.split()[0],
            "episodes": args.episodes,
            "steps": args.steps,
        }
        b.label = f"openai {openai.__version__} ({lib})"
        if vcr is not None and (lib == "httpx2" or args.probe_only):
            log(f"{b.label}: can vcrpy {result['vcrpy']} record openai on {lib}?")
            result["httpx2_probe"] = vcr_httpx2_probe(tmp)
        if args.probe_only:
            print(json.dumps(result))
            return
        log(f"{b.label}: warming up")
        warm = tmp / "warm"
        warm.mkdir()
        small = Bench(args.base_url, 1, args.steps, warm)
        small.live()
        small.ours(warm / "w.jsonl", "record")
        small.ours(warm / "w.jsonl", "replay")
        if vcr is not None:
            small.vcr(warm, record=True)
            small.vcr(warm, match_on=BODY_MATCH)
        first = measure(b, args.repeats)
        log(f"{b.label}: checking the replays")
        result["checks"] = check(b, first)
        if vcr is not None:
            result["single"] = single_cassette(b)
        result["times"] = b.times
        result["segments"] = b.segments
        result["sizes"] = {"ours": (tmp / "ours.jsonl").stat().st_size}
        if vcr is not None:
            result["sizes"]["vcr"] = sum(f.stat().st_size for f in (tmp / "vcr").iterdir())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
