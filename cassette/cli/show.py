"""``cassette show``: the episodes and steps of a cassette, one line a message."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from ..dataset.inspect import (
    content_text,
    json_text,
    new_start,
    response_message,
    tool_calls,
    usage_of,
)
from ..format.runid import set_run_id
from ..types import EnvIndex, Json
from .console import Console, existing, format_option, load, plural, reporting_warnings

if TYPE_CHECKING:
    from ..storage.index import Entry, Index

__all__ = ["episode_records", "episode_transcripts", "show"]

Segment = tuple[str, str | None]  # (text, style); a line of output is a list of segments
Transcripts = dict[EnvIndex, list[list[Segment]]]  # the lines of each episode
ROLE_STYLES = {"system": "dim", "user": "cyan", "assistant": "green", "tool": "yellow"}


@click.command()
@click.argument("path")
@click.option("--env", metavar="E", help="Only this episode (its env_index: 0, airline/task-3).")
@click.option("--channel", metavar="C", help="Only this channel (llm, mcp, ...).")
@click.option(
    "--full",
    is_flag=True,
    help="Every message of each request, untruncated (default: what each step adds, one "
    "line a message).",
)
@format_option
def show(path: str, env: str | None, channel: str | None, full: bool, fmt: str) -> None:
    """Print the episodes and steps of a cassette.

    Per step: the messages it adds (full requests are rebuilt from the delta encoding),
    the answer and its tool calls; per episode: its outcome. `--format json` prints every
    step whole (full request, response, error, meta) under its episode, for tools.

    \b
    Examples:
      cassette show runs/a.jsonl
      cassette show runs/a.jsonl --env 3 --full
      cassette show runs/shards/ --channel mcp
      cassette show runs/a.jsonl --env 3 --format json | jq '.episodes[0].steps[-1].response'
    """
    console = Console()
    with reporting_warnings(console):  # (a line found damaged later: the group's error line)
        _show(console, path, env, channel, full, fmt == "json")


def _show(
    console: Console, path: str, env: str | None, channel: str | None, full: bool, as_json: bool
) -> None:
    index = load(console, existing(console, path))
    _check(console, path, "channel", channel, sorted({key[1] for key in index.entries}))
    _check(console, path, "episode", env, [str(e) for e in index.episodes()])
    run_id = set_run_id(index.headers) if index.headers else None
    if as_json:
        records = episode_records(index, env=env, channel=channel)
        console.json({"path": path, "run_id": run_id, "episodes": records})
        return
    episodes = episode_transcripts(index, env=env, channel=channel, full=full)
    _print_text(console, path, index, run_id, episodes)


def _print_text(
    console: Console, path: str, index: Index, run_id: str | None, episodes: Transcripts
) -> None:
    counts = [(len(index.episodes()), "episode"), (len(index.entries), "interaction")]
    counts.append((len(index.outcomes), "outcome"))
    console.print(f"{path}: {', '.join(plural(n, word) for n, word in counts)}", "bold")
    if run_id is not None:
        console.print(f"run id {run_id}", "dim")
    for lines in episodes.values():
        console.print()
        for parts in lines:
            console.line(*parts)


def _check(console: Console, path: str, what: str, given: str | None, held: list[str]) -> None:
    if given is not None and given not in held:
        known = ", ".join(held[:10]) or "none"
        console.fail(f"no {what} {given} in {path} (it holds {known}); pick one of those")


_INDENT = " " * 16


def _excerpt(text: str, width: int | None) -> str:
    if width is None:
        return text.replace("\n", "\n" + _INDENT)
    one = " ".join(text.split())
    return one if len(one) <= width else one[: width - 1] + "…"


def _message_line(message: Any, width: int | None) -> list[Segment]:
    if not isinstance(message, dict):
        return [(f"{'?':>10}  ", None), (_excerpt(json_text(message), width), None)]
    role = str(message.get("role") or message.get("type") or "?")
    return [(f"{role:>10}  ", ROLE_STYLES.get(role, "bold")), (_body(message, width), None)]


def _body(message: Json, width: int | None) -> str:
    """A message's text (a tool result's after its call id), then the tool calls it makes."""
    text = _excerpt(content_text(message.get("content")), width)
    if message.get("role") == "tool" and message.get("tool_call_id"):
        text = f"[{message['tool_call_id']}] {text}"
    calls = [
        f"→ {name}({_excerpt(args, width)})" for name, args in tool_calls({"message": message})
    ]
    return "  ".join(p for p in (text, *calls) if p)


def _step_head(entry: Entry) -> list[Segment]:
    meta = entry.meta
    bits = [str(meta["model"])] if meta.get("model") else []
    if isinstance(meta.get("latency_ms"), (int, float)):
        bits.append(f"{meta['latency_ms']:g} ms")
    usage = usage_of(entry)
    if usage:
        bits.append(f"{usage['input']}+{usage['output']} tokens")
    if meta.get("redacted"):
        bits.append(f"{meta['redacted']} redacted")
    head = f"  {entry.channel} step {entry.step}"
    return [(head, "bold"), ("  " + "  ".join(bits) if bits else "", "dim")]


def _step_lines(
    entry: Entry, request: Json, start: int, width: int | None
) -> Iterator[list[Segment]]:
    yield _step_head(entry)
    messages = request.get(_message_field(request))
    if isinstance(messages, list):
        for message in messages[start:]:
            yield [("    ", None), *_message_line(message, width)]
    else:
        yield [(f"    {'request':>10}  ", "bold"), (_excerpt(json_text(request), width), None)]
    yield from _answer_lines(entry, width)


def _answer_lines(entry: Entry, width: int | None) -> Iterator[list[Segment]]:
    """The step's error, or its answer (its message, else the response) and its chunks."""
    if entry.error is not None:
        err = f"{entry.error.get('type')}: {entry.error.get('message')}"
        yield [(f"  → {'error':>10}  ", "red"), (_excerpt(err, width), "red")]
        return
    message = response_message(entry.response)
    if message is not None:
        yield [("  → ", "green"), *_message_line(message, width)]
    elif entry.response is not None:
        text = _excerpt(json_text(entry.response), width)
        yield [(f"  → {'response':>10}  ", "green"), (text, None)]
    yield from _stream_lines(entry)


def _stream_lines(entry: Entry) -> Iterator[list[Segment]]:
    chunks = (entry.response or {}).get("chunks")
    if isinstance(chunks, list):
        cut = ", cut short" if entry.meta.get("incomplete") else ""
        yield [(f"{_INDENT}(streamed, {len(chunks)} chunks{cut})", "dim")]


def _message_field(request: Json) -> str:
    return "input" if isinstance(request.get("input"), list) else "messages"


def _outcome_text(outcome: Json | None) -> str:
    if outcome is None:
        return "no outcome"
    reward, ended, info = (outcome.get(k) for k in ("reward", "terminated", "info"))
    parts = [f"reward={reward:g}"] if reward is not None else []
    if ended is not None:
        parts.append("terminated" if ended else "not terminated")
    if info:
        parts.append("info=" + _excerpt(json_text(info), 120))
    return "  ".join(parts) or "outcome recorded"


def _episodes(index: Index, env: str | None) -> list[EnvIndex]:
    """Episode ``env`` (matched by its text: ``"0"`` matches 0), or every one."""
    return [e for e in index.episodes() if env in (None, str(e))]


def _selected(index: Index, env: str | None, channel: str | None) -> Iterator[tuple[Entry, Json]]:
    """(entry, full request) of episode ``env``'s steps on ``channel`` (None: all), in order."""
    envs = set(_episodes(index, env))
    steps = index.iter_full() if envs else iter(())
    yield from ((e, r) for e, r in steps if e.env_index in envs and channel in (None, e.channel))


def episode_transcripts(
    index: Index, *, env: str | None = None, channel: str | None = None, full: bool = False
) -> Transcripts:
    """Per episode, the lines ``cassette show`` prints (``full``: every message, untruncated)."""
    out: Transcripts = {
        e: [[(f"episode {e!r}", "bold"), ("  " + _outcome_text(index.outcomes.get(e)), None)]]
        for e in _episodes(index, env)
    }
    prev: dict[tuple[EnvIndex, str], tuple[list[Any], Json | None]] = {}
    for entry, request in _selected(index, env, channel):
        messages, start = request.get(_message_field(request)), 0
        if isinstance(messages, list):
            key = (entry.env_index, entry.channel)
            start = 0 if full else new_start(messages, *prev.get(key, ([], None)))
            prev[key] = (messages, response_message(entry.response))
        out[entry.env_index].extend(_step_lines(entry, request, start, None if full else 160))
    return out


def episode_records(
    index: Index, *, env: str | None = None, channel: str | None = None
) -> list[Json]:
    """What ``cassette show --format json`` prints: per episode its outcome and whole steps."""
    out: dict[EnvIndex, Json] = {
        e: {"env_index": e, "outcome": index.outcomes.get(e), "steps": []}
        for e in _episodes(index, env)
    }
    for entry, request in _selected(index, env, channel):
        response, error = entry.served()  # (a lean line: one decode for both)
        step = {"channel": entry.channel, "step": entry.step, "request": request}
        step |= {"response": response, "error": error, "meta": entry.meta}
        out[entry.env_index]["steps"].append(step)
    return list(out.values())
