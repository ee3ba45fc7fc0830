"""``cassette tau2``: tau2-bench's ``run_tasks`` with its LLM calls on a cassette, whose header
meta (``"tau2"``) keeps the run's settings, so a replay needs nothing but the cassette."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from ..replay.cassette import Cassette
from ..types import Json
from .console import Console, reason

__all__ = ["run_tau2", "tau2_command"]

# litellm fetches its model cost map from the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DEFAULTS: Json = dict(task_ids=None, num_trials=1, max_steps=100, max_errors=10, seed=300)
REQUIRED = ("domain", "agent_llm", "user_llm")


@contextlib.contextmanager
def _quiet(on: bool) -> Iterator[None]:
    """tau2 quiet, and not asking git for a commit (outside a checkout: "fatal: ...")."""
    ConsoleDisplay = importlib.import_module("tau2.utils.display").ConsoleDisplay
    run: Any = importlib.import_module("tau2.run")
    before, asked = ConsoleDisplay.console.quiet, run.get_commit_hash
    ConsoleDisplay.console.quiet = on or before
    if on:
        run.get_commit_hash = lambda: "unknown"
    try:
        yield
    finally:
        ConsoleDisplay.console.quiet, run.get_commit_hash = before, asked


def run_tau2(
    cas: Cassette, config: Json, *, max_concurrency: int = 1, llm_args: Json | None = None,
    quiet: bool = True,
) -> tuple[list[Any], Any]:  # fmt: skip
    """tau2's ``run_tasks`` through ``cas`` (``llm_args`` unrecorded): simulations, patch."""
    from ..adapters.tau2 import patch_tau2

    run = importlib.import_module("tau2.run")
    tasks = run.get_tasks(config["domain"], task_ids=config["task_ids"] or None)
    args, c = dict(llm_args or {}), config
    with patch_tau2(cas) as patch, _quiet(quiet):
        results = run.run_tasks(
            domain=c["domain"], tasks=tasks, agent="llm_agent", user="user_simulator",
            llm_agent=c["agent_llm"], llm_args_agent=dict(args), llm_user=c["user_llm"],
            llm_args_user=dict(args), num_trials=c["num_trials"], max_steps=c["max_steps"],
            max_errors=c["max_errors"], console_display=not quiet, max_concurrency=max_concurrency,
            seed=c["seed"], log_level="CRITICAL" if quiet else "INFO", skip_failed_samples=True,
        )  # fmt: skip
    return list(results.simulations), patch


def _unreachable(url: str) -> str | None:
    """Why nothing answers at ``url``'s host and port (a TCP connect), or None if it does."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.hostname:
        return "not a URL"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=5).close()
    except OSError as exc:
        return reason(exc)
    return None


def _record_fix(path: Path, config: Json) -> str:
    """The command that re-records ``path`` with the settings it was recorded with."""
    import shlex

    argv = ["cassette", "tau2", "--mode", "record", "--domain", str(config["domain"])]
    argv += ["--agent-llm", str(config["agent_llm"]), "--user-llm", str(config["user_llm"])]
    if config.get("task_ids"):
        argv += ["--task-ids", ",".join(map(str, config["task_ids"]))]
    for key in ("num_trials", "max_steps", "seed"):
        if config.get(key) is not None and config[key] != DEFAULTS.get(key):
            argv += [f"--{key.replace('_', '-')}", str(config[key])]
    return f"to re-record, run `{shlex.join([*argv, str(path)])}` against a live model"


def _tasks_fix(domain: str) -> str:
    """What to pass instead of an unknown ``--domain`` or ``--task-ids``."""
    try:
        known = list(importlib.import_module("tau2.registry").registry.get_task_sets())
    except (ImportError, AttributeError):
        known = []
    if known and domain not in known:
        return f"pick --domain from {', '.join(known)}"
    return f"check --domain and --task-ids (each a task id of {domain})"


def _local(given: str | None, mode: str) -> Path | None:
    """CASSETTE as a local path; a URL is refused, naming the `cassette merge` that copies it."""
    from ..storage.remote import is_url

    if given is None or not is_url(given):
        return None if given is None else Path(given.removeprefix("file://"))
    local = "runs/mock.jsonl"
    fix = (
        f"record into a local file, then upload it: cassette merge {given} {local}"
        if mode == "record"
        else f"copy it first: cassette merge {local} {given}, then cassette tau2 {local}"
    )
    Console.fail(f"cassette tau2 takes a local CASSETTE, not the URL {given}; {fix}")


def _exists(path: Path) -> bool:
    return path.is_dir() or (path.is_file() and path.stat().st_size > 0)


_EXAMPLE = "--domain mock --agent-llm openai/gpt-4.1-mini --user-llm openai/gpt-4.1-mini"


def _settle(options: Json, recorded: Json, path: Path | None = None) -> Json:
    """The run's settings: the options, else what the replayed cassette ``path`` recorded."""
    merged = {**DEFAULTS, **recorded, **{k: v for k, v in options.items() if v is not None}}
    config = {k: merged.get(k) for k in (*REQUIRED, *DEFAULTS)}
    missing = [f"--{k.replace('_', '-')}" for k in REQUIRED if not config[k]]
    if missing:
        Console.fail(_unsettled(missing, path, recorded))
    return config


def _unsettled(missing: list[str], path: Path | None, recorded: Json) -> str:
    if path is not None and not recorded:
        return (
            f"{path} is not a `cassette tau2` recording (its header holds no tau2 settings); "
            "name a cassette that `cassette tau2 --mode record` wrote, or replay the shipped "
            "one with `cassette tau2 --bundled`"
        )
    return f"{', '.join(missing)} required to record, e.g. {_EXAMPLE}"


def _reward(sim: Any) -> float | None:
    if getattr(sim, "skipped", False) or sim.reward_info is None:
        return None
    return float(sim.reward_info.reward)


def _fmt(value: Any) -> str:
    return "error" if value is None else f"{value:g}"


@click.command("tau2", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("given", metavar="CASSETTE", type=click.Path(), required=False)
@click.option("--bundled", is_flag=True,
              help="Replay the tau2 mock run shipped with the package, not CASSETTE.")  # fmt: skip
@click.option("--mode", type=click.Choice(["record", "replay", "append", "auto"]),
              default="replay", show_default=True,
              help="record: call the models, write CASSETTE; replay: serve it.")  # fmt: skip
@click.option("--domain", help="tau2 domain: mock, airline, retail, telecom.")
@click.option("--task-ids", multiple=True, metavar="IDS",
              help="Task ids, comma-separated or repeated (default: every task).")  # fmt: skip
@click.option("--num-trials", type=int, help="Trials per task (default 1).")
@click.option("--max-concurrency", type=int, default=1, show_default=True)
@click.option("--agent-llm", metavar="MODEL", help="litellm model of the agent.")
@click.option("--user-llm", metavar="MODEL", help="litellm model of the user simulator.")
@click.option("--base-url", metavar="URL", help="OpenAI-compatible endpoint to record from.")
@click.option("--api-key", envvar="CASSETTE_TAU2_API_KEY",
              help="Key for --base-url (default: $OPENAI_API_KEY, else a dummy).")  # fmt: skip
@click.option("--max-steps", type=int, help="Steps per episode (default 100).")
@click.option("--seed", type=int, help="run_tasks' seed (default 300).")
@click.option("--meta", "meta_items", multiple=True, metavar="KEY=VALUE",
              help="Extra header meta when recording.")  # fmt: skip
@click.option("-v", "--verbose", is_flag=True, help="Show tau2's own logs and progress.")
def tau2_command(
    given: str | None, bundled: bool, mode: str, domain: str | None, task_ids: tuple[str, ...],
    num_trials: int | None, max_concurrency: int, agent_llm: str | None, user_llm: str | None,
    base_url: str | None, api_key: str | None, max_steps: int | None, seed: int | None,
    meta_items: tuple[str, ...], verbose: bool,
) -> None:  # fmt: skip
    """Run tau2-bench with its LLM calls recorded to, or replayed from, CASSETTE.

    Only the LLM calls go through the cassette; a replay is offline and takes its settings
    from the cassette header.

    \b
    Examples:
      cassette tau2 --bundled
      cassette tau2 runs/mock.jsonl
      cassette tau2 --mode record --domain mock --num-trials 2 \\
        --agent-llm openai/gpt-4.1-mini --user-llm openai/gpt-4.1-mini runs/mock.jsonl
    """
    from ..errors import CassetteError

    path = _cassette(given, bundled, mode)
    if not verbose:
        _quiet_import()
    options = dict(domain=domain, task_ids=_ids(task_ids), num_trials=num_trials, seed=seed,
                   agent_llm=agent_llm, user_llm=user_llm, max_steps=max_steps)  # fmt: skip
    try:
        if _replays(mode, path):
            cas, config = _replayed(path, mode, options, bundled)
        else:
            cas, config = _recorded(path, mode, options, base_url, meta_items)
        with cas:
            llm_args = _llm_args(base_url, api_key)
            sims, patch = run_tau2(cas, config, max_concurrency=max_concurrency,
                                   llm_args=llm_args, quiet=not verbose)  # fmt: skip
    except CassetteError as exc:  # (the command is also called outside the group)
        Console.fail(str(exc))
    except (ValueError, KeyError) as exc:  # tau2: unknown domain or task ids
        Console.fail(f"tau2: {exc}; {_tasks_fix(domain or '')}")
    _report(path, cas, config, sims, patch)


def _ids(task_ids: tuple[str, ...]) -> list[str] | None:
    return [i for item in task_ids for i in item.replace(",", " ").split()] or None


def _replays(mode: str, path: Path) -> bool:
    return mode in ("replay", "append") or (mode == "auto" and _exists(path))


def _llm_args(base_url: str | None, api_key: str | None) -> Json:
    """The endpoint and key of the models (a key without --base-url goes as it is)."""
    if not base_url:
        return {"api_key": api_key} if api_key else {}
    return {"api_base": base_url, "api_key": api_key or os.environ.get("OPENAI_API_KEY") or "dummy"}


def _cassette(given: str | None, bundled: bool, mode: str) -> Path:
    from ..errors import CassetteError
    from ..testing.bundled import bundled as bundled_path

    path = _local(given, mode)
    if not bundled:
        if path is None:
            Console.fail(
                "name the CASSETTE to replay or record, or replay the shipped one with --bundled"
            )
        return path
    if path is not None or mode != "replay":
        Console.fail("--bundled replays the shipped cassette; leave out CASSETTE and --mode")
    try:
        return bundled_path("tau2_mock")
    except CassetteError as exc:
        Console.fail(str(exc))


def _quiet_import() -> None:
    """Import tau2 with its logger quiet (its import-time chatter)."""
    import importlib.util

    if "tau2" in sys.modules:
        return
    if importlib.util.find_spec("tau2") is None:  # name the extra's module, not loguru
        raise ModuleNotFoundError("No module named 'tau2'", name="tau2")
    from loguru import logger  # tau2's logger

    logger.remove()


def _replayed(path: Path, mode: str, options: Json, bundled: bool) -> tuple[Cassette, Json]:
    from ..replay.cassette import open as open_cassette

    if not _exists(path):
        Console.fail(
            f"no cassette at {path}; check the path, record one with `cassette tau2 "
            f"--mode record {_EXAMPLE} {path}`, or replay the shipped one with "
            "`cassette tau2 --bundled`"
        )
    cas = open_cassette(path, mode)
    header = (cas.index.headers or [{}])[0].get("meta") or {}
    config = _settle(options, header.get("tau2") or {}, path)
    if not cas.forced:  # a miss names this command, not a variable
        target = Path("runs/mock.jsonl") if bundled else path  # not the package's copy
        cas.fix = _record_fix(target, config)
    return cas, config


def _recorded(
    path: Path, mode: str, options: Json, base_url: str | None, meta_items: tuple[str, ...]
) -> tuple[Cassette, Json]:
    """A cassette opened to record, and the settings (tasks and endpoint checked first)."""
    from ..replay.cassette import open as open_cassette

    config = _settle(options, {})
    ids = config["task_ids"]  # an unknown domain or task id: ValueError or KeyError from tau2
    importlib.import_module("tau2.run").get_tasks(config["domain"], task_ids=ids or None)
    why = _unreachable(base_url) if base_url else None
    if why is not None:
        Console.fail(f"cannot reach {base_url} ({why}); check --base-url", 1)
    extra = dict(item.partition("=")[::2] for item in meta_items)
    return open_cassette(path, mode, meta={**extra, "tau2": config}), config


def _rows(envs: list[Any], sims: list[Any], cas: Cassette, replay: bool) -> int:
    """A row per episode (in a replay, with its recorded reward); how many rewards differ."""
    width = max([7, *map(len, map(str, envs))])
    click.echo(f"{'episode':<{width}}  reward  {'recorded  ' if replay else ''}termination")
    differs = 0
    for env, sim in zip(envs, sims, strict=True):
        reward, was = _reward(sim), cas.index.outcomes.get(env, {}).get("reward")
        line = f"{env!s:<{width}}  {_fmt(reward):>6}  "
        if replay:
            line += f"{_fmt(was):>8}  " + ("" if was == reward else "DIFFERS ")
            differs += was != reward
        click.echo(line + str(getattr(sim.termination_reason, "value", sim.termination_reason)))
    return differs


def _report(path: Path, cas: Cassette, config: Json, sims: list[Any], patch: Any) -> None:
    """The rows, then the mean reward; exit 1 if a replay's rewards differ from the recording."""
    from ..adapters.tau2 import env_index_for

    replay = patch.live_calls == 0 and cas.mode.value == "replay"
    envs = [env_index_for(config["domain"], s.task_id, s.trial or 0) for s in sims]
    differs = _rows(envs, sims, cas, replay)
    mean = sum(_reward(sim) or 0.0 for sim in sims) / max(len(sims), 1)
    done = f"{patch.live_calls} LLM calls made, cassette {path} ({cas.mode.value})"
    if replay:
        done = f"{patch.calls} LLM calls replayed from {path}, 0 live"
    click.echo(f"{len(sims)} episodes of {config['domain']}, mean reward {mean:.3f}; {done}")
    if replay and differs:
        Console.fail(f"{differs} episode(s) got a reward other than the recorded one", 1)
