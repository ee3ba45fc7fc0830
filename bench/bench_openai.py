"""Side-by-side benchmark: one agent loop through the openai SDK, live, recorded and
replayed with this project and with vcrpy, in one run.

    python bench/bench_openai.py            # 50 episodes x 10 steps, 3 runs of each
    python bench/bench_openai.py --quick    # 5 episodes x 10 steps (smoke run)

The loop (bench/_openai_worker.py): per episode a system prompt and a task, then 10 calls
of ``client.chat.completions.create`` with two tools; each step appends the assistant
message and a tool result (after a tool call) or a user message, so the conversation
grows to 22 messages. The model is the scripted OpenAI-compatible server of fixtures/ in
"script" mode, started once as a separate process on 127.0.0.1 (no model latency: the
live rows are the cost of the SDK and HTTP alone, the hardest baseline for a recorder).

Rows, for each openai install:
(1) live           plain SDK client against the local server
(2) record         this project: ``wrap_openai`` + ``cassette.open(path, "record")``,
                   episodes keyed with ``cassette.episode(i)``
(3) replay         this project: ``cassette.open(path, "replay")``, client at a closed port
(4) record         vcrpy, one cassette per episode (as one test per episode would have)
(5) replay         vcrpy, ``record_mode="none"``, its default ``match_on`` (method, scheme,
                   host, port, path, query)
(6) replay         vcrpy with ``"body"`` added to ``match_on``: what an LLM test needs, since
                   every call goes to the same URL
(t) transform      only the SDK's ``maybe_transform`` of the run's requests, which the SDK
                   does on every live call (the adapter's replay builds its request without)
(p) probe          3 calls recorded with vcrpy under openai 3.x (``httpx2``), then replayed:
                   does the cassette hold them, does the replay still reach the server?
Targets: (3) at least 10x faster than (1) and than (5); (2) under 10% over (1).

Each timed run includes opening and closing its cassettes. The runs are interleaved, N of
each (--repeats); "floor" is the sum over episodes (and cassette open/close) of the fastest
of the N, which filters out other processes on a shared machine; ratios use it. Replays
are checked against the recording field by field, with the episodes in reverse order, and
with episode 0's task edited (a request never recorded: an error is the right answer).
A note gives vcrpy with one cassette for a few episodes instead of one per episode.

Then the agent workload of issue 10 (bench/_openai_worker.py --agent), in its own table:
50 episodes x 10 steps through the real SDK, the whole growing conversation resent each step
(about 3.6 KB a request), a tool call every third reply. Rows: ``create`` replay per call
(time in calls only, target <= 100 us) and its floor (orjson parse of the reply + dict
lookup + pydantic validation into the SDK type + sorted orjson dump and sha256 of the
request); ``create(stream=True)`` replay (the chunks read in the call's time) and its floor
(the recorded chunks parsed, each validated into a ``ChatCompletionChunk``, the request
hashed); ``AsyncOpenAI`` replay and its floor (the same work as the first, in a coroutine
awaited per call); each replay at most 1.6x its floor; ``with_raw_response.create`` replay
against live (target >= 5x), and ``wrap_openai`` in a fresh process (target < 20 ms);
medians of --repeats interleaved runs, ratios from the same run. ``--agent-only`` runs
just this table. Every row, replay or floor, retains the same across its run: nothing of
a call's SDK objects past the call. The loop keeps what a real agent keeps, the messages
it resends, and each reply as JSON bytes dumped outside the timed span for the check
after the run (kept objects would put the garbage collector's walks over them, and at
some runs a full collection of the whole process, into whichever row they fell in).

Two installs, each in its own process (bench/_openai_worker.py prints JSON):
- the one in this interpreter (openai 3.x, built on ``httpx2``), plus vcrpy from an overlay
  venv ``.venv-bench-main`` (this interpreter's packages + vcrpy) unless vcrpy is installed;
- ``.venv-bench``: openai 2.x (built on ``httpx``) + vcrpy + this project (``-e .``).
A third, ``.venv-bench-vcr8`` (this openai + vcrpy 8.1.1 + ``-e .``), only tries whether an
older vcrpy sees openai 3.x's requests. The venvs are made on the first run (``.venv-*/``
is git-ignored).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import version as dist_version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from _common import command_line
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
WORKER = Path("bench") / "_openai_worker.py"
OPENAI_2 = "openai==2.54.0"  # the newest 2.x, built on httpx
VCRPY = "vcrpy==9.4.2"
VCRPY_OLD = "vcrpy==8.1.1"  # the last vcrpy without an httpx2 patch
Json = dict[str, Any]
LEGEND = (
    "(1) the loop against cassette/testing/server.py (own process, 127.0.0.1, mode script, no "
    "model latency): the SDK's and HTTP's own cost",
    "(2)(3) this project: wrap_openai + cassette.open(path, 'record'/'replay'), "
    "cassette.episode(i); the replay client points at a closed port, so nothing goes live",
    "(4)-(6) vcrpy: one cassette per episode (as one test per episode); (5) default match_on "
    "= method, scheme, host, port, path, query; (6) the same + body",
    "(t) the SDK's maybe_transform of the run's requests alone: the SDK runs it on every live "
    "call; the adapter's fast path builds its request with one orjson pass instead",
    "(p) 3 calls recorded with vcrpy under openai 3.x, then replayed: does the cassette hold "
    "them, and does the replay still reach the server?",
    "times include opening and closing the cassettes; floor = sum over episodes of the "
    "fastest of N interleaved runs; median = of the N whole runs; ratios from the floor. "
    "responses: compared field by field with the recording; 'task "
    "edited' = episode 0 with a changed task, a request never recorded, where an error is right",
)


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def scrub(text: str) -> str:
    """Text with this machine's paths replaced by placeholders."""
    for path, name in ((ROOT, "."), (Path(tempfile.gettempdir()), "<tmp>"), (Path.home(), "~")):
        text = text.replace(str(path), name)
    return text


# --- environments ------------------------------------------------------------------------


def _python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _run(cmd: list[str], what: str) -> bool:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-8:])
        say(f"  {what} failed (exit {done.returncode}):\n{scrub(tail)}")
    return done.returncode == 0


def ensure_venv(name: str, packages: list[str], overlay: bool) -> Path | None:
    """The python of venv ``name`` under the repository, made on first use: with
    ``packages`` installed, and over this interpreter's packages if ``overlay``."""
    venv = ROOT / name
    python = _python(venv)
    marker = venv / "bench-requirements.txt"
    want = "\n".join([*packages, f"overlay={overlay}", sys.version.split()[0]]) + "\n"
    if python.exists() and marker.exists() and marker.read_text() == want:
        return python
    what = "this interpreter's packages + " if overlay else ""
    say(f"setting up {name} ({what}{' '.join(packages)}), first run only:")
    say(f"  python -m venv --clear {name}")
    if not _run([sys.executable, "-m", "venv", "--clear", name], "python -m venv"):
        return None
    if overlay:  # this interpreter's site-packages, .pth files included, after the venv's
        import site

        dirs = [*site.getsitepackages()]
        user = site.getusersitepackages()
        if site.ENABLE_USER_SITE and os.path.isdir(user):
            dirs.append(user)
        purelib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        lines = [f"import site; site.addsitedir({d!r})" for d in dirs]
        (Path(purelib) / "_bench_overlay.pth").write_text("\n".join(lines) + "\n")
        say(f"  {name}/.../site-packages/_bench_overlay.pth: this interpreter's site-packages")
    say(f"  {name}/bin/python -m pip install {' '.join(packages)}")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not _run([*pip, *packages], "pip install"):
        return None
    marker.write_text(want)
    return python


# --- the scripted server and the workers -------------------------------------------------


class Server:
    """``python -m cassette.testing.server --port 0 --mode script`` in its own process."""

    def __enter__(self) -> str:
        cmd = [sys.executable, "-m", "cassette.testing.server", "--port", "0", "--mode", "script"]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if line[:1] != ["READY"]:
            self.proc.kill()
            raise RuntimeError("the scripted server did not start")
        return line[1]

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_worker(python: Path | str, args: list[str], where: str) -> Json | None:
    """The worker's JSON (plus ``where`` it ran), its progress lines passed on to stderr."""
    proc = subprocess.Popen(
        [str(python), str(WORKER), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    errors: list[str] = []
    for line in proc.stderr:
        errors.append(line.rstrip())
        if not line.startswith((" ", "Traceback")) and ": " in line and len(errors) < 40:
            say("  " + scrub(line.rstrip()))
    out = proc.stdout.read()
    if proc.wait() != 0:
        say(f"  worker failed (exit {proc.returncode}):\n" + scrub("\n".join(errors[-12:])))
        return None
    result: Json = json.loads(out.strip().splitlines()[-1])
    result["where"] = where
    return result


# --- the table ---------------------------------------------------------------------------


@dataclass
class Rows:
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    verdicts: list[bool] = field(default_factory=list)

    def add(self, *cells: str, ok: bool | None = None) -> None:
        mark = "-" if ok is None else "[green]yes[/]" if ok else "[bold red]NO[/]"
        if ok is not None:
            self.verdicts.append(ok)
        self.rows.append([*cells, mark])


def floor(runs: list[list[float]]) -> float:
    """The sum, segment by segment (cassette open/close, then each episode), of the
    fastest of the runs: what is left when the other processes of a shared machine are
    filtered out, one episode at a time."""
    return float(sum(min(column) for column in zip(*runs, strict=True)))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.0f} ms" if seconds >= 0.1 else f"{seconds * 1e3:,.1f} ms"


def _per_call(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us / 1e3:,.2f} ms" if us >= 1000 else f"{us:,.0f} µs"


def _speed(base: float, t: float, of: str) -> str:
    return f"{base / t:.1f}x faster than {of}" if t <= base else f"{t / base:.2f}x slower than {of}"


def _raised(found: Json, right_of: int | None = None) -> str:
    if found["raised"]:
        return f"raises {found['raised']}"
    if right_of is not None:
        return f"{found['right']}/{found['served']} right, no error"
    return f"serves {found['served']} recorded answers, no error"


def env_rows(table: Rows, env: Json, first_label: str) -> None:
    times: dict[str, list[float]] = env["times"]
    checks: Json = env["checks"]
    calls = checks["calls"]
    best = {k: floor(v) for k, v in env["segments"].items()}
    live = best["live"]
    n = {k: len(v) for k, v in times.items()}
    label = first_label

    def row(
        tag: str, name: str, key: str, ratio: str, target: str, ok: bool | None, check: str
    ) -> None:
        cells = [label, tag, name, _ms(best[key]), _ms(statistics.median(times[key]))]
        table.add(*cells, _per_call(best[key] / calls), ratio, target, check, ok=ok)

    rec_over = best["ours_record"] / live - 1
    row(
        "(1)",
        "live, local scripted server",
        "live",
        "1.00x",
        "-",
        None,
        "-",
    )
    label = ""
    row(
        "(2)",
        "record, this project",
        "ours_record",
        f"{best['ours_record'] / live:.2f}x (1), {rec_over:+.0%}",
        "< +10% over (1)",
        rec_over < 0.10,
        f"{checks['ours_record_vs_live']}/{calls} = live (but 'created')",
    )
    faster = live / best["ours_replay"]
    row(
        "(3)",
        "replay, this project",
        "ours_replay",
        _speed(live, best["ours_replay"], "(1)"),
        ">= 10x faster than (1)",
        faster >= 10,
        f"{checks['ours_same']}/{calls} = recorded; episodes reversed: "
        f"{_raised(checks['ours_reversed'], calls)}; task edited: "
        f"{_raised(checks['ours_edited'])}",
    )
    has_vcr = "vcr_replay" in best
    if has_vcr:
        vs = best["vcr_replay"] / best["ours_replay"]
        table.add(
            "",
            "(3):(5)",
            "replay, this project vs vcrpy default",
            "-",
            "-",
            "-",
            _speed(best["vcr_replay"], best["ours_replay"], "(5)"),
            ">= 10x faster than (5)",
            "-",
            ok=vs >= 10,
        )
        row(
            "(4)",
            f"record, vcrpy {env['vcrpy']}",
            "vcr_record",
            f"{best['vcr_record'] / live:.2f}x (1), {best['vcr_record'] / live - 1:+.0%}",
            "-",
            None,
            f"{checks['vcr_record_vs_live']}/{calls} = live (but 'created')",
        )
        row(
            "(5)",
            "replay, vcrpy default matchers",
            "vcr_replay",
            _speed(live, best["vcr_replay"], "(1)"),
            "-",
            None,
            f"{checks['vcr_same']}/{calls} = recorded; task edited: "
            f"{_raised(checks['vcr_edited'])}",
        )
        row(
            "(6)",
            "replay, vcrpy + body matching",
            "vcr_replay_body",
            _speed(live, best["vcr_replay_body"], "(1)"),
            "-",
            None,
            f"{checks['vcr_body_same']}/{calls} = recorded; task edited: "
            f"{_raised(checks['vcr_body_edited'])}",
        )
    else:
        table.add(label, "(4-6)", "vcrpy", "-", "-", "-", "-", "-", "not run: no vcrpy here")
    row(
        "(t)",
        "the SDK's maybe_transform alone",
        "sdk_transform",
        f"{best['sdk_transform'] / live:.0%} of (1), "
        f"{best['sdk_transform'] / best['ours_replay']:.0%} of (3)",
        "-",
        None,
        "-",
    )
    runs = ", ".join(f"{k} {v}" for k, v in n.items() if v != max(n.values()))
    table.notes.append(
        f"openai {env['openai']} ({env['where']}): N = {max(n.values())}"
        + (f" ({runs})" if runs else "")
        + f"; {calls} calls; cassette on disk: this project {env['sizes']['ours']:,} B"
        + (f", vcrpy {env['sizes']['vcr']:,} B (YAML)" if "vcr" in env["sizes"] else "")
    )


def _blind(found: Json) -> bool:
    """vcrpy did not see the calls: nothing recorded, or the replay reached the server."""
    return not found["recorded"] or bool(found["hits_replay"])


def probe_rows(table: Rows, label: str, probes: list[Json]) -> None:
    for env in probes:
        found = env.get("httpx2_probe")
        if not found:
            continue
        table.add(
            label,
            "(p)",
            f"vcrpy {env['vcrpy']} on openai {env['openai']} ({env['http']})",
            "-",
            "-",
            "-",
            "-",
            "-",
            f"recorded {found['recorded']}/3 calls; replay: {found['played']} played, "
            f"{found['hits_replay']} reached the server"
            + (f", raised {found['raised']}" if found["raised"] else "")
            + (" -> sees nothing" if _blind(found) else " -> works"),
        )


def print_table(table: Rows, title: str) -> None:
    header = [
        "openai",
        "#",
        "run",
        "floor",
        "median",
        "per call",
        "ratio",
        "target",
        "responses",
        "ok?",
    ]
    out = Table(title=title, title_justify="left", show_lines=False)
    for i, name in enumerate(header):
        wrap = name in ("responses", "run", "ratio", "openai")
        out.add_column(
            name,
            justify="right" if 3 <= i <= 5 else "left",
            overflow="fold" if wrap else "ellipsis",
            no_wrap=not wrap,
            max_width=38 if name == "responses" else None,
        )
    for cells in table.rows:
        if cells[0] and out.row_count:
            out.add_section()
        out.add_row(*cells)
    Console(width=max(200, Console().width)).print(out)


# --- the agent workload table -------------------------------------------------------------


def agent_table(results: list[Json], episodes: int, steps: int) -> None:
    out = Table(
        title=f"agent workload (issue 10), {episodes} episodes x {steps} steps, openai SDK",
        title_justify="left",
    )
    for name in ("openai", "row", "value", "target", "ok?"):
        out.add_column(name, justify="right" if name == "value" else "left")
    for env in results:
        calls = env["calls"]
        # best: each episode's fastest of the runs, summed (filters the other processes of
        # a shared machine); median: of the runs' totals
        best = {k: floor(v) / calls for k, v in env["times"].items()}
        med = {k: statistics.median(map(sum, v)) / calls for k, v in env["times"].items()}
        label = f"{env['openai']} ({env['http']})"

        def both(key: str, best: Json = best, med: Json = med) -> str:
            return f"{_per_call(best[key])} ({_per_call(med[key])})"

        def ok(good: bool) -> str:
            return "[green]yes[/]" if good else "[bold red]NO[/]"

        def vs_floor(key: str, floor: str, best: Json = best) -> tuple[str, str, str, str]:
            ratio = best[key] / best[floor]
            return (
                f"{key.replace('_', ' ')} / {floor.replace('_', ' ')}",
                f"{ratio:.2f}x",
                "<= 1.6x",
                ok(ratio <= 1.6),
            )

        same, calls_ = env["same"], calls
        rows = [
            ("create replay, per call (calls only)", both("replay"), "<= 100 µs",
             ok(best["replay"] <= 100e-6)),
            ("the floor, per call", both("floor"), "-", "-"),
            vs_floor("replay", "floor"),
            ("stream replay, per call (chunks read)", both("replay_stream"), "-", "-"),
            ("the stream floor, per call", both("floor_stream"), "-", "-"),
            vs_floor("replay_stream", "floor_stream"),
            ("async create replay, per call", both("replay_async"), "-", "-"),
            ("the async floor, per call", both("floor_async"), "-", "-"),
            vs_floor("replay_async", "floor_async"),
            ("create live, per call", both("live"),
             f"replay {best['live'] / best['replay']:,.0f}x faster", "-"),
            ("with_raw_response.create replay, per call", both("replay_raw"), "-", "-"),
            ("with_raw_response.create live, per call", both("live_raw"), "-", "-"),
            ("with_raw_response.create replay vs live",
             f"{best['live_raw'] / best['replay_raw']:.1f}x faster", ">= 5x",
             ok(best["live_raw"] / best["replay_raw"] >= 5)),
            ("wrap_openai, fresh process", f"{env['wrap']['wrap'] * 1e3:.2f} ms", "< 20 ms",
             ok(env["wrap"]["wrap"] < 0.02)),
            ("cassette.open (replay), fresh process", f"{env['wrap']['open'] * 1e3:.1f} ms",
             "-", "-"),
            ("replays equal to the recording",
             f"{same['replay']}/{calls_} create, {same['replay_raw']}/{calls_} raw, "
             f"{same['replay_stream']}/{calls_} stream, {same['replay_async']}/{calls_} async",
             "all", ok(all(same[k] == calls_ for k in
                           ("replay", "replay_raw", "replay_stream", "replay_async")))),
        ]  # fmt: skip
        for i, row in enumerate(rows):
            if i == 0 and out.row_count:
                out.add_section()
            out.add_row(label if i == 0 else "", *row)
    Console(width=max(120, Console().width)).print(out)
    for env in results:
        runs = len(env["times"]["replay"])
        print(
            f"openai {env['openai']}: {env['calls']} calls, {env['request_bytes']:,.0f} B a "
            f"request on average, {env['tool_calls']} tool calls, {env['chunks']:,} chunks "
            f"in the streamed run; {runs} interleaved runs; "
            "per call = time inside the SDK calls / calls: best (each episode's fastest "
            "run, summed; ratios from it) and, in brackets, the median run"
        )


def run_agent(here: Path | str, bench: Path | None, args: argparse.Namespace) -> None:
    size = ["--episodes", "50", "--steps", "10", "--repeats", str(args.repeats)]
    if args.quick:
        size[1] = "5"
    found: list[Json] = []
    with Server() as url:
        for python, where in ((here, "this interpreter"), (bench, ".venv-bench")):
            if python is not None:
                result = run_worker(python, ["--base-url", url, "--agent", *size], where)
                found += [result] if result else []
    agent_table(found, int(size[1]), 10)


# --- main --------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer episodes (smoke run)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each row")
    parser.add_argument("--agent-only", action="store_true", help="only the agent workload")
    args = parser.parse_args()
    started = time.perf_counter()
    if args.agent_only:
        bench = ensure_venv(".venv-bench", [OPENAI_2, VCRPY, "-e", "."], overlay=False)
        run_agent(sys.executable, bench, args)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; total "
              f"{time.perf_counter() - started:.0f} s")  # fmt: skip
        print(f"command: {command_line()}")
        return
    episodes, steps = (5, 10) if args.quick else (50, 10)

    here: Path | str = sys.executable
    where = "this interpreter"
    if find_spec("vcr") is None:
        overlay = ensure_venv(".venv-bench-main", [VCRPY], overlay=True)
        if overlay is not None:
            here, where = overlay, "this interpreter's packages + vcrpy, in .venv-bench-main"
        else:
            where = "this interpreter, no vcrpy"
    openai_here = f"openai=={dist_version('openai')}"
    old = ensure_venv(".venv-bench-vcr8", [openai_here, VCRPY_OLD, "-e", "."], overlay=False)
    bench = ensure_venv(".venv-bench", [OPENAI_2, VCRPY, "-e", "."], overlay=False)
    setup = time.perf_counter() - started

    size = ["--episodes", str(episodes), "--steps", str(steps), "--repeats", str(args.repeats)]
    results: list[Json | None] = []
    probes: list[Json] = []
    with Server() as url:
        say(f"scripted server ready (mode script) on {url}")
        results.append(run_worker(here, ["--base-url", url, *size], where))
        if old is not None:
            found = run_worker(old, ["--base-url", url, "--probe-only"], ".venv-bench-vcr8")
            probes += [found] if found else []
        if bench is not None:
            results.append(run_worker(bench, ["--base-url", url, *size], ".venv-bench"))
        else:
            say(f"no .venv-bench: the {OPENAI_2} rows are left out")

    table = Rows()
    for env in results:
        if env is None:
            continue
        label = f"{env['openai']} on {env['http']} {env['http_version']}"
        env_rows(table, env, label)
        if env["http"] == "httpx2":
            probe_rows(table, "", [env, *probes])
    quick = " (--quick)" if args.quick else ""
    title = (
        f"openai SDK agent loop, {episodes} episodes x {steps} steps: live vs record/replay{quick}"
    )
    print_table(table, title)
    for line in LEGEND:
        print(line)
    for env in results:
        single = (env or {}).get("single")
        if env and single:
            rev = single["default_reversed"]
            table.notes.append(
                f"openai {env['openai']}: vcrpy with ONE cassette for {single['episodes']} "
                f"episodes ({single['calls']} calls) instead of one per episode: default "
                f"matchers {_per_call(single['default_per_call'])}/call, body matching "
                f"{_per_call(single['body_per_call'])}/call (each earlier recorded request that "
                f"does not match is diffed, so this grows with the cassette); episodes "
                f"replayed in reverse order under the default matchers: {rev['right']}/"
                f"{rev['served']} answers right, no error (served in recorded order)"
            )
    verdicts = [
        f"vcrpy {e['vcrpy']}: recorded {f['recorded']}/3, replay reached the server "
        f"{f['hits_replay']}/3 times -> claim {'true' if _blind(f) else 'false'}"
        for e in [*results, *probes]
        if e and (f := e.get("httpx2_probe"))
    ]
    if verdicts:
        table.notes.append(
            'claim "vcrpy cannot record openai>=3 (httpx2)", tried in (p): ' + "; ".join(verdicts)
        )
    for note in table.notes:
        print(note)
    versions = "; ".join(
        f"openai {e['openai']}, {e['http']} {e['http_version']}, vcrpy {e['vcrpy'] or '-'}"
        for e in results
        if e
    )
    run_agent(here, bench, args)
    total = time.perf_counter() - started
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; {versions}; "
        f"total {total:.0f} s (of which venv setup {setup:.0f} s)"
    )
    print(f"command: {command_line()}")


if __name__ == "__main__":
    main()
