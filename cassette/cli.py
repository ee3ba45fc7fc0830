"""The ``cassette`` command: a click group, one small function per command, lazy imports."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .console import (
    LARGE_BYTES,
    Console,
    OneLineGroup,
    count_lines,
    existing,
    load,
    size,
    working,
    writable,
)

__all__ = ["Console", "main"]


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@click.group(
    name="cassette", cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.option(
    "--color/--no-color",
    default=None,
    help="Colour the output (default: on a terminal, unless NO_COLOR is set). "
    "JSON output is never coloured.",
)
@click.version_option(package_name="rollout-cassette")
def main(color: bool | None) -> None:
    """Record the LLM calls of agent runs, replay them offline, diff two runs.

    \b
    Examples:
      cassette show runs/a.jsonl --env 0
      cassette stats runs/a.jsonl --json
      cassette validate runs/a.jsonl
      cassette run --mode replay --cassette runs/a.jsonl -- pytest -q
    """


@main.command()
@click.option("--live", is_flag=True, help="Record against OPENAI_API_KEY's endpoint instead.")
@click.option("--model", default=None, help="Model name (default: gpt-4o-mini with --live).")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to write the cassette (default: demo.jsonl in a new temporary folder).",
)
@click.option(
    "--bundled", is_flag=True, help="Only replay the bundled fixtures/demo.jsonl offline."
)
def demo(live: bool, model: str | None, out: str | None, bundled: bool) -> None:
    """Record a tool-calling agent through the real openai SDK, then replay it offline.

    With no API key and no network: starts the scripted model server on 127.0.0.1,
    records three episodes, stops the server, replays the run with no model at all and
    shows that transcripts and rewards are identical. Exit 1 if they are not.

    \b
    Examples:
      cassette demo
      OPENAI_API_KEY=... cassette demo --live --model gpt-4o-mini
      cassette demo --bundled
    """
    import os
    import tempfile

    from cassette.errors import CassetteError

    console = Console()
    if bundled:
        _demo_bundled(console)
        return
    if live and not os.environ.get("OPENAI_API_KEY"):
        console.fail("--live needs OPENAI_API_KEY (and optionally OPENAI_BASE_URL) set")
    from cassette.demo import run_demo

    path = Path(out) if out else Path(tempfile.mkdtemp(prefix="cassette-demo-")) / "demo.jsonl"
    try:
        run = run_demo(path, live=live, model=model)
    except FileNotFoundError as exc:
        console.fail(f"{exc} is missing; run the demo from a source checkout")
    except CassetteError as exc:
        console.fail(str(exc))
    _demo_transcripts(console, run.replayed)
    console.print()
    console.print(
        f"recorded {_n(run.calls, 'model call')} from {run.source} "
        f"({run.record_s * 1000:.0f} ms, SDK start-up included)"
    )
    console.print(f"replayed them with no model reachable ({run.replay_s * 1000:.0f} ms)")
    verdict = "identical" if run.identical else "DIFFERENT"
    console.print(
        f"transcripts and rewards: {verdict}", "bold green" if run.identical else "bold red"
    )
    console.print(f"cassette: {run.path}")
    if not run.identical:
        sys.exit(1)


def _demo_transcripts(console: Console, transcripts: list[Any]) -> None:
    for t in transcripts:
        console.print(f"episode {t.env_index}  reward={t.reward:g}", "bold")
        for message in t.messages:
            text = message.get("content") or ""
            for call in message.get("tool_calls") or []:
                text += f"{call['function']['name']}({call['function']['arguments']})"
            console.print(f"  {message['role']:>9}: {text}")


def _demo_bundled(console: Console) -> None:
    import cassette
    from cassette.demo import cassette_chat, fixtures_dir, run_agent

    def no_model(request: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("replay must not call the model")

    target = fixtures_dir() / "demo.jsonl"
    try:
        with cassette.open(target, mode="replay") as cas:
            results = run_agent(cassette_chat(cas, no_model), cas)
            served = len(cas.index.entries) - len(cas.unused())
    except FileNotFoundError:
        console.fail(f"no cassette at {target}; run the demo from a source checkout")
    except cassette.CassetteError as exc:
        console.fail(str(exc))
    _demo_transcripts(console, results)
    console.print(f"replayed {target.name} offline: {_n(served, 'model call')} served, 0 live")


# --- inspection commands (show, stats, validate) --------------------------------------


@main.command()
@click.argument("path")
@click.option("--env", metavar="E", help="Only this episode (its env_index: 0, airline/task-3).")
@click.option("--channel", metavar="C", help="Only this channel (llm, mcp, ...).")
@click.option(
    "--full",
    is_flag=True,
    help="Every message of each request, untruncated (default: what each step adds, one "
    "line a message).",
)
def show(path: str, env: str | None, channel: str | None, full: bool) -> None:
    """Print the episodes and steps of a cassette.

    Per step: the messages it adds (full requests are rebuilt from the delta encoding),
    the answer and its tool calls; per episode: its outcome.

    \b
    Examples:
      cassette show runs/a.jsonl
      cassette show runs/a.jsonl --env 3 --full
      cassette show runs/shards/ --channel mcp
    """
    from cassette.inspect import episode_transcripts

    console = Console()
    index = load(console, existing(console, path))
    channels = sorted({key[1] for key in index.entries})
    if channel is not None and channel not in channels:
        console.fail(f"no channel {channel} in {path} (it holds {', '.join(channels) or 'none'})")
    episodes = episode_transcripts(index, env=env, channel=channel, full=full)
    if env is not None and not episodes:
        held = ", ".join(str(e) for e in index.episodes()[:10]) or "none"
        console.fail(f"no episode {env} in {path} (it holds {held}); pick one of those")
    head = f"{path}: {len(index.episodes())} episodes, {len(index.entries)} interactions"
    console.print(f"{head}, {len(index.outcomes)} outcomes", "bold")
    for lines in episodes.values():
        console.print()
        for parts in lines:
            console.line(*parts)


@main.command()
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON (never coloured).")
def stats(path: str, as_json: bool) -> None:
    """Count episodes, steps, tokens, cost, latency, rewards.

    Episodes, steps per channel, models, token and cost totals, latency percentiles (from
    meta.latency_ms), the tool calls that responses asked for, and outcome rewards.

    \b
    Examples:
      cassette stats runs/a.jsonl
      cassette stats runs/shards/ --json | jq .outcomes.reward.mean
    """
    from cassette.stats import compute_stats, stats_rows

    console = Console()
    data = {"path": path, **compute_stats(load(console, existing(console, path)))}
    if as_json:
        console.json(data)
        return
    console.print(path, "bold")
    for label, value in stats_rows(data):
        console.line((f"  {label:<16}", "bold"), value)


@main.command()
@click.argument("path")
@click.option(
    "--ignore",
    multiple=True,
    metavar="PATH",
    help="An ignore rule the cassette was recorded with, e.g. temperature or "
    "'messages[*].name' (it changes request_sha256); repeatable.",
)
def validate(path: str, ignore: tuple[str, ...]) -> None:
    """Check every line of a cassette; list every fault.

    Checks the schema, the header and its version, the delta references (each request is
    rebuilt), request_sha256 against the rebuilt request (except where secrets were
    redacted), and that no key is recorded twice. Exit 0 with one OK line, or 1 with a
    `path:line: what` line for every fault.

    \b
    Examples:
      cassette validate runs/a.jsonl
      cassette validate runs/shards/ --ignore temperature
    """
    from cassette.matching import Matcher
    from cassette.validate import validate as check

    console = Console()
    target = existing(console, path)
    try:
        Matcher(ignore)
    except ValueError as exc:
        console.fail(str(exc))
    big = size(target) >= LARGE_BYTES
    total = count_lines(target) if big and console.terminal else None
    try:
        with working(console, f"validating {target.name}", total, show=big) as advance:
            report = check(target, ignore=ignore, progress=advance)
    except OSError as exc:
        console.fail(f"cannot read {path}: {exc.strerror}; check the path and its permissions")
    found = [(f, "") for f in report.faults] + [(w, "warning: ") for w in report.warnings]
    for fault, kind in sorted(found, key=lambda pair: (pair[0].path, pair[0].line)):
        where = f"{fault.path}:{fault.line}: " if fault.line else f"{fault.path}: "
        console.line((where + kind, "yellow" if kind else "red"), fault.message)
    notes = f", {_n(len(report.warnings), 'warning')}" if report.warnings else ""
    if report.ok:
        console.print(f"OK {path}: {report.summary()}{notes}", "green")
        return
    console.print(f"{_n(len(report.faults), 'fault')} in {path}: {report.summary()}{notes}", "red")
    sys.exit(1)


# --- diff ---------------------------------------------------------------------------------


@main.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="text for a terminal, json for tools, markdown for a pull-request comment.",
)
@click.option(
    "--html",
    "html_out",
    metavar="OUT.html",
    help="Also write the report as one self-contained HTML file (sortable episode table, "
    "both trajectories side by side).",
)
@click.option(
    "--ignore",
    multiple=True,
    metavar="PATH",
    help="Leave PATH out of the comparison: a request key (temperature, 'messages[*].name'), "
    "a path as the diff prints it (response.choices[0].message.content), or '**.timestamp' "
    "at any depth; repeatable.",
)
@click.option("--env", metavar="E", help="Only this episode (its env_index).")
def diff(
    a: str, b: str, fmt: str, html_out: str | None, ignore: tuple[str, ...], env: str | None
) -> None:
    """Compare two runs episode by episode.

    Episodes are aligned by env_index: identical, diverged, or only in A / only in B. For a
    diverged one: the first (channel, step) where the runs part, whether the request or
    the response parted, the exact path and both values, and both tool-call sequences;
    rewards and their delta; tokens, cost and mean reward of each run. Volatile fields
    (response ids, timestamps, generated tool-call ids) are ignored and listed.

    Exit 0 when the runs are equivalent, 1 when they differ, 2 on a usage or file error.

    \b
    Examples:
      cassette diff runs/a.jsonl runs/b.jsonl
      cassette diff runs/a.jsonl runs/b.jsonl --format markdown > comment.md
      cassette diff runs/a.jsonl runs/b.jsonl --html report.html --ignore model
      cassette diff runs/a/ runs/b/ --env 3 --format json | jq '.episodes[0].divergence'
    """
    import shutil

    from cassette.diff import Rules, diff_runs
    from cassette.errors import CassetteError
    from cassette.report import render_html, render_json, render_markdown, render_text

    console = Console()
    paths = existing(console, a), existing(console, b)
    if html_out is not None and Path(html_out).is_dir():
        console.fail(f"--html {html_out} is a directory; name the file, e.g. report.html")
    try:
        Rules(ignore)
    except ValueError as exc:
        console.fail(f"--ignore: {exc}")
    index_a, index_b = load(console, paths[0]), load(console, paths[1])
    big = size(paths[0]) + size(paths[1]) >= LARGE_BYTES
    total = len({*index_a.episodes(), *index_b.episodes()})
    try:
        with working(console, "comparing episodes", total, show=big) as advance:
            done = [0]

            def progress(now: int, _total: int) -> None:
                advance(now - done[0])
                done[0] = now

            result = diff_runs(
                index_a, index_b, ignore=ignore, env=env, progress=progress, labels=(a, b)
            )
            page = render_html(result) if html_out is not None else None
    except (ValueError, CassetteError) as exc:
        console.fail(str(exc))
    if page is not None and html_out is not None:
        try:
            Path(html_out).write_text(page, encoding="utf-8")
        except OSError as exc:
            console.fail(f"cannot write {html_out}: {exc.strerror}; check the path")
        click.echo(f"wrote {html_out}", err=True)
    if fmt == "json":
        console.echo(render_json(result).rstrip("\n"))
    elif fmt == "markdown":
        console.echo(render_markdown(result).rstrip("\n"))
    else:
        width = shutil.get_terminal_size((100, 24)).columns if console.terminal else 100
        click.echo(render_text(result, color=console.color, width=width), color=console.color)
    if not result.equivalent:
        sys.exit(1)


# --- conversion commands (convert, redact, merge, run) --------------------------------


@main.command()
@click.option(
    "--from",
    "source",
    type=click.Choice(["ep"]),
    required=True,
    help="The input's format: ep = an eval-protocol playback file (EP_PLAYBACK_FILE).",
)
@click.argument("src", metavar="IN")
@click.argument("out", metavar="OUT")
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists.")
def convert(source: str, src: str, out: str, force: bool) -> None:
    """Turn an eval-protocol playback file into a cassette.

    Each line (env_index, step, messages) becomes one interaction: its request the
    messages before the last assistant message, its response that message. Written by the
    recorder, so OUT is delta-encoded and redacted like any recording.

    \b
    Examples:
      cassette convert --from ep playback.jsonl runs/ep.jsonl
      cassette show runs/ep.jsonl
    """
    from cassette.convert import from_eval_protocol
    from cassette.errors import CassetteError

    console = Console()
    path = existing(console, src)
    target = writable(console, out, force)
    big = size(path) >= LARGE_BYTES
    try:
        with working(console, f"converting {path.name}", show=big) as advance:
            index = from_eval_protocol(path, target, progress=advance)
    except CassetteError as exc:
        console.fail(str(exc))
    counts = f"{_n(len(index.entries), 'interaction')}, {_n(len(index.episodes()), 'episode')}"
    console.print(f"converted {src} to {out}: {counts}")


@main.command()
@click.argument("src", metavar="IN")
@click.argument("out", metavar="[OUT]", required=False)
@click.option("--key", "keys", multiple=True, help="Also scrub the value of this key; repeatable.")
@click.option(
    "--pattern",
    "patterns",
    multiple=True,
    help="Also scrub strings that match this regular expression; repeatable.",
)
def redact(src: str, out: str | None, keys: tuple[str, ...], patterns: tuple[str, ...]) -> None:
    """Scrub secrets from an existing cassette.

    API keys, auth headers and tokens are replaced, in place when OUT is omitted
    (atomically). request_sha256 stays as it was recorded; each interaction that changed
    gains meta.redacted. Reports how many values it replaced per line type.

    \b
    Examples:
      cassette redact runs/a.jsonl
      cassette redact runs/a.jsonl shared/a.jsonl --key session_id --pattern 'tok_\\w+'
    """
    import re

    from cassette.convert import redact as scrub
    from cassette.errors import CassetteError
    from cassette.redact import Redactor

    console = Console()
    path = existing(console, src)
    if out is not None and path.is_dir() != Path(out).is_dir() and Path(out).exists():
        console.fail(f"{src} and {out} must both be files or both be directories")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            console.fail(f"--pattern {pattern!r} is not a regular expression ({exc}); fix it")
    redactor = Redactor(extra_keys=keys, extra_patterns=patterns)
    big = size(path) >= LARGE_BYTES
    total = count_lines(path) if big and console.terminal else None
    try:
        with working(console, f"redacting {path.name}", total, show=big) as advance:
            counts = scrub(path, Path(out) if out else None, redactor=redactor, progress=advance)
    except CassetteError as exc:
        console.fail(str(exc))
    except OSError as exc:
        console.fail(f"cannot rewrite {out or src}: {exc.strerror}; check the path and permissions")
    where = f"{src} (in place)" if out is None else f"{src} into {out}"
    if not counts:
        console.print(f"nothing to redact in {where}")
        return
    per_type = ", ".join(f"{kind} {n}" for kind, n in sorted(counts.items()))
    console.print(f"redacted {_n(sum(counts.values()), 'value')} in {where}: {per_type}")


@main.command()
@click.argument("out", metavar="OUT")
@click.argument("inputs", metavar="IN...", nargs=-1, required=True)
@click.option(
    "--on-conflict",
    type=click.Choice(["error", "first", "last", "renumber"]),
    default="error",
    show_default=True,
    help="When two inputs hold the same key: error; keep the episode from the first or "
    "last input that holds it; or renumber every env_index as <input stem>/<env_index>.",
)
@click.option("--force", is_flag=True, help="Overwrite OUT if it exists (it may be an input).")
def merge(out: str, inputs: tuple[str, ...], on_conflict: str, force: bool) -> None:
    """Merge shard directories or runs into one cassette.

    Full requests are rebuilt and recorded again (so the deltas of OUT are valid);
    hashes, responses and meta are kept. Keys held by two inputs are refused unless
    --on-conflict says which to keep.

    \b
    Examples:
      cassette merge runs/all.jsonl runs/shards/
      cassette merge both.jsonl a.jsonl b.jsonl --on-conflict renumber   # "a/0", "b/0"
    """
    from cassette.convert import merge as combine
    from cassette.errors import CassetteError

    console = Console()
    paths = [existing(console, path) for path in inputs]
    target = writable(console, out, force)
    big = sum(size(path) for path in paths) >= LARGE_BYTES
    try:
        with working(console, "merging", show=big) as advance:
            merged = combine(target, paths, on_conflict=on_conflict, progress=advance)
    except CassetteError as exc:  # a MergeConflict names the key and both files
        console.fail(str(exc))
    counts = f"{_n(merged.interactions, 'interaction')}, {_n(merged.outcomes, 'outcome')}"
    counts += f", {_n(merged.episodes, 'episode')}"
    console.print(f"merged {_n(len(paths), 'input')} into {out}: {counts}")
    for env, source in merged.dropped:
        console.print(f"  dropped episode {env!r} of {source} (--on-conflict {on_conflict})")
    for source, prefix in merged.prefixes.items():
        console.print(f"  episodes of {source} are now {prefix}/<env_index>")


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option(
    "--mode",
    type=click.Choice(["replay", "record", "auto", "append", "passthrough"], case_sensitive=False),
    default="auto",
    show_default=True,
    help="Set as CASSETTE_MODE.",
)
@click.option("--cassette", "path", required=True, metavar="PATH", help="Set as CASSETTE_PATH.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- CMD ...")
def run(mode: str, path: str, command: tuple[str, ...]) -> None:
    """Run a command with CASSETTE_MODE and CASSETTE_PATH set.

    CASSETTE_PATH is made absolute. Exits with the command's exit code (127: not found,
    126: not runnable, 128+N: killed by signal N).

    \b
    Examples:
      cassette run --mode replay --cassette runs/a.jsonl -- pytest -q
      cassette run --mode record --cassette runs/new.jsonl -- python agent.py --task 3
    """
    import os
    import subprocess

    console = Console()
    env = {**os.environ, "CASSETTE_MODE": mode.lower(), "CASSETTE_PATH": os.path.abspath(path)}
    try:
        proc = subprocess.Popen(list(command), env=env)
    except FileNotFoundError:
        console.fail(f"command not found: {command[0]}; check its name and PATH", code=127)
    except PermissionError:
        console.fail(f"cannot run {command[0]}: permission denied; make it executable", code=126)
    while True:
        try:
            code = proc.wait()
            break
        except KeyboardInterrupt:  # the command got the signal too: wait for it to finish
            continue
    sys.exit(code if code >= 0 else 128 - code)
