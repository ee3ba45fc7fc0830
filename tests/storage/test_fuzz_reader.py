"""The reader fuzz: mutations of valid cassettes (bit flips, truncations, values of the
wrong type in every field, deep nesting, odd stream chunks, duplicated, dropped and moved
lines, runs of blank lines, gzip, cut-short gzip) put through every reader.

The library raises only CassetteError subclasses (or reads the file); the command line
(show, stats, validate, diff, convert) exits with a code, prints at most one ``error:``
line and never a traceback, within 10 s a run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cassette.cli import main
from tests.helpers.fuzz import make_base, mutated, read_everything

pytestmark = pytest.mark.slow

CLI = "import sys; from cassette.cli import main; sys.exit(main())"


def _fuzz(examples: str, default: int) -> settings:
    return settings(_FUZZ, max_examples=int(os.environ.get(examples, default)))


_FUZZ = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=os.environ.get("CASSETTE_FUZZ_RANDOM") is None,
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return make_base(tmp_path_factory.mktemp("fuzz") / "base.jsonl").read_bytes()


def _write(tmp: Path, data: bytes, gz: bool, name: str = "f") -> Path:
    path = tmp / (f"{name}.jsonl.gz" if gz else f"{name}.jsonl")
    path.write_bytes(data)
    return path


@_fuzz("CASSETTE_FUZZ_EXAMPLES", 500)
@given(data=st.data())
def test_the_library_raises_only_cassette_errors(
    base: bytes, tmp_path: Path, data: st.DataObject
) -> None:
    raw, gz = data.draw(mutated(base))
    path = _write(tmp_path, raw, gz)
    started = time.perf_counter()
    read_everything(path)
    assert time.perf_counter() - started < 10


def _check_cli(result: object, args: list[str]) -> None:
    exc = getattr(result, "exception", None)
    assert exc is None or isinstance(exc, SystemExit), (args, repr(exc))
    out = getattr(result, "output", "")
    assert "Traceback" not in out, (args, out)
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) <= 1, (args, out)
    if getattr(result, "exit_code", 0) == 2:
        assert errors, (args, out)


@_fuzz("CASSETTE_FUZZ_CLI_EXAMPLES", 150)
@given(data=st.data())
def test_the_command_line_prints_one_line_errors(
    base: bytes, tmp_path: Path, data: st.DataObject
) -> None:
    raw, gz = data.draw(mutated(base))
    path = _write(tmp_path, raw, gz)
    good = _write(tmp_path, base, False, "good")
    out = tmp_path / "out.jsonl"
    runner = CliRunner()
    commands = [
        ["show", str(path)],
        ["show", str(path), "--full"],
        ["stats", str(path)],
        ["stats", str(path), "--json"],
        ["validate", str(path)],
        ["diff", str(good), str(path)],
        ["convert", "--from", "ep", str(path), str(out), "--force"],
        ["merge", str(out), str(path), "--force", "--on-conflict", "first"],
    ]
    for args in commands:
        started = time.perf_counter()
        result = runner.invoke(main, args)
        assert time.perf_counter() - started < 10, args
        _check_cli(result, args)


def test_real_processes_exit_with_one_line(base: bytes, tmp_path: Path) -> None:
    """A few mutated files through the installed entry point, as a user runs it."""
    lines = base.split(b"\n")
    cases = {
        "cut": base[: len(base) // 2],
        "flip": base.replace(b'"a1"', b'"a3"', 1),
        "deep": lines[0]
        + b"\n"
        + lines[1].replace(b'"temperature":0.5', b'"t":' + b"[" * 400 + b"]" * 400)
        + b"\n",
        "type": base.replace(b'"step":1', b'"step":[1]', 1),
    }
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    for name, raw in cases.items():
        path = _write(tmp_path, raw, False, name)
        for command in (
            (["show"], ["stats", "--json"]) if name in ("cut", "deep") else (["validate"],)
        ):
            proc = subprocess.run(
                [sys.executable, "-c", CLI, *command, str(path)],
                capture_output=True,
                text=True,
                timeout=10,
                env=env,
            )
            assert "Traceback" not in proc.stderr, (name, command, proc.stderr)
            if proc.returncode == 2:
                errors = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
                assert len(errors) == 1, (name, command, proc.stderr)
