"""``cassette view``: one self-contained HTML page of runs, two or more side by side with their
diff; written privately (0600) or served (:mod:`.server`)."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CassetteWarning
from ..format.runid import run_id_of
from ..storage.index import Index, load_index
from ..storage.lines import read_records
from ..storage.store import shard_files
from ..types import Json
from .model import run_summary
from .page import render_page

__all__ = ["Run", "build_page", "load_run", "load_runs", "write_page"]

_HEAVY = ("tool_calls_a", "tool_calls_b", "alignment")  # shown from the calls themselves


def _diff(a: Run, b: Run) -> Json:
    from ..diff import diff_runs

    data = diff_runs(a.index, b.index, labels=(a.name, b.name)).to_dict()
    data["episodes"] = [{k: v for k, v in e.items() if k not in _HEAVY} for e in data["episodes"]]
    return data


@dataclass
class Run:
    """A run to show: its index, its name, and what loading it warned about."""

    index: Index
    name: str
    warnings: list[str] = field(default_factory=list)


def load_run(path: Path, name: str | None = None) -> Run:
    """Load the cassette at ``path`` (a file or shard directory), keeping its warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CassetteWarning)
        index = load_index([path])
    return Run(index, name or str(path), [str(w.message) for w in caught])


def load_runs(path: Path, name: str | None = None) -> list[Run]:
    """The run at ``path``; a folder of files of different runs (by their headers' run ids):
    one run a file."""
    files = shard_files(path) if path.is_dir() else []
    if len({_run_id(file) for file in files}) < 2:
        return [load_run(path, name)]
    return [load_run(file) for file in files]


def _run_id(file: Path) -> str | None:
    _, first = next(read_records(file), (0, {}))  # (the reader is closed as it is dropped)
    return run_id_of(first)


def build_page(runs: list[Run]) -> str:
    """The page of ``runs`` (the first two are diffed), each with its warnings on top."""
    summaries, details = [], []
    for run in runs:
        summary, calls = run_summary(run.index, run.name)
        summary["warnings"] = run.warnings
        summaries.append(summary)
        details.append(calls)
    diff = _diff(runs[0], runs[1]) if len(runs) >= 2 else None
    return render_page(summaries, details, diff)


def write_page(text: str, path: Path) -> None:
    """Write the page privately (0600), replacing ``path`` whole."""
    side = path.with_name(f".{path.name}.{os.getpid()}.part")
    fd = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(side, path)
    except BaseException:
        side.unlink(missing_ok=True)
        raise
