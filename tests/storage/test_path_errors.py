"""A path that cannot be read or written is one CassetteError line ending with the fix,
from every public function that takes paths (load_index, validate, diff_runs, diff_many,
export_parquet, import_parquet, from_eval_protocol, redact, merge): missing,
a file where a directory is needed, a symbolic link to itself, a binary file, a directory
where the output file goes. CassettePathError is also the OSError it was, for old code."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.dataset.convert import from_eval_protocol, merge, redact
from cassette.dataset.validate import validate
from cassette.diff import diff_runs
from cassette.diff.many import diff_many
from cassette.storage.index import load_index

EP = Path(__file__).parents[1] / "fixtures" / "cli" / "ep_playback.jsonl"


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"q": 1}, live=lambda: {"a": 1})
    return path


def _bad_inputs(tmp: Path, good: Path) -> dict[str, tuple[Path, str]]:
    """name -> (path, what the message says)."""
    (tmp / "loop").symlink_to(tmp / "loop")
    (tmp / "binary.jsonl").write_bytes(bytes(range(256)) * 8)
    return {
        "missing": (tmp / "missing.jsonl", f"no such file or directory: {tmp}/missing.jsonl"),
        "under a file": (good / "x.jsonl", "a part of the path is a file, not a directory"),
        "link to itself": (tmp / "loop", "a symbolic link that leads to itself"),
        "binary": (tmp / "binary.jsonl", "binary.jsonl:1: not valid JSON"),
    }


def _export(src: Path, out: Path) -> Any:
    pytest.importorskip("pyarrow")
    from cassette.dataset.export import export_parquet

    return export_parquet(src, out)


READERS: dict[str, Callable[[Path, Path, Path], Any]] = {
    "load_index": lambda p, good, tmp: load_index([p]),
    "validate": lambda p, good, tmp: validate(p),
    "diff_runs": lambda p, good, tmp: diff_runs(good, p),
    "diff_many": lambda p, good, tmp: diff_many([good, p]),
    "export_parquet": lambda p, good, tmp: _export(p, tmp / "ds"),
    "from_eval_protocol": lambda p, good, tmp: from_eval_protocol(p, tmp / "ep.jsonl"),
    "redact": lambda p, good, tmp: redact(p, tmp / "r.jsonl"),
    "merge": lambda p, good, tmp: merge(tmp / "m.jsonl", [good, p]),
}


def _one_line(exc: BaseException, says: str) -> None:
    message = str(exc)
    assert says in message and "\n" not in message, message
    assert message.split("; ")[-1].startswith(("check ", "fix ", "name ")), message


@pytest.mark.parametrize("reader", READERS)
def test_every_reader_raises_one_line_cassette_errors(
    tmp_path: Path, good: Path, reader: str
) -> None:
    for name, (path, says) in _bad_inputs(tmp_path, good).items():
        if reader == "validate" and name == "binary":
            assert not validate(path).ok  # a fault it reports, as every fault of a file
            continue
        with pytest.raises(cassette.CassetteError) as info:
            READERS[reader](path, good, tmp_path)
        _one_line(info.value, says)
        for leftover in ("ep.jsonl", "r.jsonl", "m.jsonl", "ds"):
            assert not (tmp_path / leftover).exists(), (reader, name, leftover)


def test_load_index_of_a_missing_path_is_a_cassette_path_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    with pytest.raises(cassette.CassettePathError) as info:
        load_index([missing])
    assert str(info.value) == f"no such file or directory: {missing}; check the path"
    assert isinstance(info.value, OSError) and info.value.errno == errno.ENOENT
    assert info.value.filename == str(missing) == info.value.path


WRITERS: dict[str, Callable[[Path, Path], Any]] = {
    "redact": lambda good, out: redact(good, out),
    "merge": lambda good, out: merge(out, [good]),
    "import_parquet": lambda good, out: _import(good, out),
    "from_eval_protocol": lambda good, out: from_eval_protocol(EP, out),
}


def _import(good: Path, out: Path) -> Any:
    from cassette.dataset.export import import_parquet

    dataset = good.parent / "dataset"
    if not dataset.exists():
        _export(good, dataset)
    return import_parquet(dataset, out)


@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_names_an_output_it_cannot_write(
    tmp_path: Path, good: Path, writer: str
) -> None:
    directory = tmp_path / "a-directory"
    (directory / "inside").mkdir(parents=True)
    cases = {
        good / "out.jsonl": f"{good} exists and is not a directory; check the path",
        directory: f"{directory} is a directory; name a file",
    }
    if writer == "from_eval_protocol":  # a directory is a shard directory to it
        del cases[directory]
    for out, says in cases.items():
        with pytest.raises(cassette.CassettePathError) as info:
            WRITERS[writer](good, out)
        _one_line(info.value, says)
    assert sorted(os.listdir(directory)) == ["inside"]  # no side file left behind


def test_commands_say_it_in_one_line(tmp_path: Path, good: Path) -> None:
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    for bad in (str(good / "x.jsonl"), str(tmp_path / "loop")):
        for args in (["stats", bad], ["validate", bad], ["merge", str(tmp_path / "o.jsonl"), bad]):
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 2, (args, result.output)
            assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
            assert bad in result.stderr


def test_an_os_error_about_no_path_stays_what_it_is(good: Path) -> None:
    """A broken pipe under a progress bar is no path's fault: it is not made a path error
    (the command line answers it as the exit of ``cassette diff A B | head``)."""

    def progress(lines: int) -> None:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    with pytest.raises(BrokenPipeError) as info:
        validate(good, progress=progress)
    assert not isinstance(info.value, cassette.CassetteError)
