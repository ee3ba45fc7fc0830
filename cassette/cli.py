"""The ``cassette`` command: a click group, one small function per command, lazy imports."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .console import LARGE_BYTES, Console, OneLineGroup, existing, load, writable

__all__ = ["Console", "main"]


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

    from cassette.demo import record_and_replay, replay_bundled

    console = Console()
    if bundled:
        replay_bundled(console)
        return
    if live and not os.environ.get("OPENAI_API_KEY"):
        console.fail("--live needs OPENAI_API_KEY (and optionally OPENAI_BASE_URL) set")
    if not record_and_replay(console, out, live=live, model=model):
        sys.exit(1)


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
    from cassette.file_commands import validate_command

    console = Console()
    target = existing(console, path)
    if not validate_command(console, target, path, ignore=ignore, large=LARGE_BYTES):
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
    from cassette.report.command import compare, print_report, write_html

    console = Console()
    paths = existing(console, a), existing(console, b)
    if html_out is not None and Path(html_out).is_dir():
        console.fail(f"--html {html_out} is a directory; name the file, e.g. report.html")
    html = html_out is not None
    result, page = compare(
        console, paths, (a, b), ignore=ignore, env=env, html=html, large=LARGE_BYTES
    )
    if page is not None and html_out is not None:
        write_html(console, page, html_out)
    print_report(console, result, fmt)
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
    from cassette.file_commands import convert_command

    console = Console()
    path = existing(console, src)
    target = writable(console, out, force)
    convert_command(console, path, target, src, out, large=LARGE_BYTES)


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
    from cassette.file_commands import redact_command

    console = Console()
    path = existing(console, src)
    if out is not None and path.is_dir() != Path(out).is_dir() and Path(out).exists():
        console.fail(f"{src} and {out} must both be files or both be directories")
    redact_command(console, path, src, out, keys=keys, patterns=patterns, large=LARGE_BYTES)


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
    from cassette.file_commands import merge_command

    console = Console()
    paths = [existing(console, path) for path in inputs]
    target = writable(console, out, force)
    merge_command(console, target, out, paths, on_conflict=on_conflict, large=LARGE_BYTES)


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


main.lazy = {"tau2": "cassette.tau2_cli:tau2_command"}  # tau2-bench: `pip install -e '.[tau2]'`
