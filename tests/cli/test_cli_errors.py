"""No command prints a traceback for a user error or a network failure: a walk of the
command line with bad paths, dead endpoints and a missing extra, each answered with one
line ``error: <what>; <the fix>`` and a non-zero exit code.

The commands run as a user runs them, in a child process (a traceback is what a process
prints, not what click's test runner keeps).
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.chat import MakeServer
from tests.helpers.cli import (
    BLOCK,
    MAIN,
    REPO,
    TAU2_MOCK,
    cassette_cli,
    dead_url,
    needs_tau2,
    one_line_error,
)

GOOD = REPO / "tests" / "fixtures" / "cli" / "run_a.jsonl"


@pytest.fixture
def place(tmp_path: Path) -> Path:
    """A folder with a good cassette, an empty folder, and no missing.jsonl."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "good.jsonl").write_bytes(GOOD.read_bytes())
    return tmp_path


BAD_PATHS = [
    (("show", "missing.jsonl"), "no such file or directory: missing.jsonl"),
    (("stats", "missing.jsonl"), "no such file or directory: missing.jsonl"),
    (("validate", "missing.jsonl"), "no such file or directory: missing.jsonl"),
    (("redact", "missing.jsonl"), "no such file or directory: missing.jsonl"),
    (("diff", "good.jsonl", "missing.jsonl"), "no such file or directory: missing.jsonl"),
    (("merge", "out.jsonl", "missing.jsonl"), "no such file or directory: missing.jsonl"),
    (("convert", "--from", "ep", "missing.jsonl", "o.jsonl"), "missing.jsonl"),
    (("tau2", "missing.jsonl"), "no cassette at missing.jsonl"),
    (("show", "empty"), "empty is a directory with no shard files"),
    (("stats", "empty"), "empty is a directory with no shard files"),
    (("validate", "empty"), "empty is a directory with no shard files"),
    (("redact", "empty"), "empty is a directory with no shard files"),
    (("diff", "empty", "good.jsonl"), "empty is a directory with no shard files"),
    (("merge", "out.jsonl", "empty"), "empty is a directory with no shard files"),
    (("merge", "empty", "good.jsonl"), "empty is a directory"),
    (("diff", "good.jsonl", "good.jsonl", "--html", "empty"), "--html empty is a directory"),
    (("demo", "--out", "empty"), "is a directory"),
    (("demo", "--bundled", "--live"), "--bundled only replays the shipped cassette; drop --live"),
    (("show", "good.jsonl", "--env", "nope"), "no episode nope in good.jsonl"),
    (("run", "--", "no-such-command-here"), "command not found: no-such-command-here"),
    (("run", "--mode", "rewind", "--", "true"), "Invalid value for '--mode'"),
    (("show",), "Missing argument"),
    (
        ("run", "--mode", "record", "--cassette", "/proc/x.jsonl", "--", "true"),
        "cannot record /proc/x.jsonl: /proc is not writable; record into a directory you can",
    ),
    (("shwo", "good.jsonl"), "No such command 'shwo'. Did you mean 'show'?; see"),
    (("run", "--mdoe", "record", "--", "true"), "No such option '--mdoe'. Did you mean '--mode'?"),
    (("convert", "a.jsonl", "b.jsonl"), "Missing option '--from'. Choose from: ep; see"),
    (("show", "good.jsonl", "--env"), "'--env' requires an argument; see `cassette show --help`"),
    (("diff", "good.jsonl", "--ignore"), "requires an argument; see `cassette diff --help`"),
    (("import", "good.jsonl", "o.jsonl"), "good.jsonl is a file, not a dataset; name the"),
    (("import", "missing", "o.jsonl"), "no such directory: missing; name the directory"),
    (("import", "memory://none/ds/", "o.jsonl"), "memory://none/ds/ holds no interactions"),
    (
        ("run", "--mode", "replay", "--cassette", "missing.jsonl", "--", "true"),
        "no cassette at missing.jsonl to replay; check the path, or record it first:",
    ),
    (("view", "good.jsonl", "--port", "99999"), "'--port': 99999 is not in the range 0<=x<="),
    (("serve", "--cassette", "good.jsonl", "--port", "-1"), "'--port': -1 is not in the range"),
    (
        ("serve", "--cassette", "missing.jsonl", "--mode", "replay"),
        "no cassette at missing.jsonl to replay; check the path, or record it first: cassette s",
    ),
]


# an output named as a directory (Path() drops the "/", and a file of that name was written)
OUT_DIRS = [
    (("demo", "--out", "newdir/"), "--out newdir/ is a directory; name the file, e.g. --out new"),
    (("demo", "--out", "s3://bucket/d.jsonl"), "--out s3://bucket/d.jsonl is a URL; name a local"),
    (("merge", "newdir/", "good.jsonl"), "newdir/ is a directory; name the output file, e.g. new"),
    (("redact", "good.jsonl", "newdir/"), "newdir/ is a directory; name the output file, e.g. ne"),
]


@pytest.mark.parametrize(("args", "says"), OUT_DIRS, ids=[" ".join(a) for a, _ in OUT_DIRS])
def test_an_output_named_as_a_directory_is_one_line(
    place: Path, args: tuple[str, ...], says: str
) -> None:
    assert says in one_line_error(cassette_cli(*args, cwd=place))
    assert sorted(p.name for p in place.iterdir()) == ["empty", "good.jsonl"]  # nothing written


@pytest.mark.parametrize(("args", "says"), BAD_PATHS, ids=[" ".join(a) for a, _ in BAD_PATHS])
def test_a_bad_path_or_argument_is_one_line(place: Path, args: tuple[str, ...], says: str) -> None:
    assert says in one_line_error(cassette_cli(*args, cwd=place))


def test_tau2_without_the_extra_says_what_to_install(place: Path) -> None:
    proc = cassette_cli("tau2", str(TAU2_MOCK), cwd=place, prelude=BLOCK)
    line = one_line_error(proc)
    assert line.endswith("pip install 'rollout-cassette[tau2]'"), line
    assert "No module named 'tau2'" in line, line  # not a module of tau2's own (loguru)
    assert proc.stdout == ""


@pytest.mark.slow
def test_demo_live_against_a_dead_endpoint_is_one_line(place: Path) -> None:
    url = dead_url()
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": url}
    proc = cassette_cli("demo", "--live", "--out", "live.jsonl", cwd=place, env=env)
    line = one_line_error(proc)
    assert url in line and "OPENAI_BASE_URL" in line, line


def test_demo_live_without_a_key_is_one_line(place: Path) -> None:
    line = one_line_error(cassette_cli("demo", "--live", cwd=place))
    assert "OPENAI_API_KEY" in line, line


@needs_tau2
def test_tau2_record_against_a_dead_endpoint_is_one_line(place: Path) -> None:
    url = dead_url()
    llms = ("--agent-llm", "openai/m", "--user-llm", "openai/m")
    argv = ("tau2", "--mode", "record", "--domain", "mock", *llms, "--base-url", url, "r.jsonl")
    proc = cassette_cli(*argv, cwd=place)
    line = one_line_error(proc)
    assert proc.returncode == 1 and url in line and "check --base-url" in line, line
    assert not (place / "r.jsonl").exists()


def test_a_bundled_demo_that_misses_names_no_re_record_of_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from cassette.cli import main

    module = importlib.import_module("cassette.testing.bundled")  # the package exports its function
    header_only = tmp_path / "demo.jsonl"
    header_only.write_text(module.bundled("demo").read_text().splitlines()[0] + "\n")
    monkeypatch.setattr(module, "bundled", lambda name: header_only)
    result = CliRunner().invoke(main, ["demo", "--bundled"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: no recording for env_index=0")
    assert "record a fresh run with `cassette demo`" in result.stderr
    assert "CASSETTE_FORCE_MODE" not in result.stderr and result.stderr.count("\n") == 1


def test_demo_live_with_a_key_the_endpoint_refuses_is_one_line(
    place: Path, make_server: MakeServer
) -> None:
    server = make_server("random", errors={1: {"status": 401, "message": "Incorrect API key"}})
    env = {"OPENAI_API_KEY": "sk-wrong", "OPENAI_BASE_URL": server.base_url}
    proc = cassette_cli("demo", "--live", "--out", "live.jsonl", cwd=place, env=env)
    line = one_line_error(proc)
    assert f"{server.base_url}/chat/completions answered 401" in line, line
    assert "Incorrect API key" in line and "OPENAI_API_KEY" in line, line


def test_a_reader_that_stops_early_is_no_network_error(place: Path) -> None:
    """`cassette show X | head -1`: the closed pipe (a ConnectionError subclass) is neither a
    traceback nor a 'cannot reach the endpoint' error; the command stops quietly."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASSETTE_", "OPENAI_"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command prints its first line
    try:
        proc = subprocess.run(
            [sys.executable, "-c", MAIN, "show", "good.jsonl", "--full"],
            stdout=write,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=place,
            timeout=120,
        )
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


# an object store that refuses every request with an error of its own (not an OSError),
# as s3fs does without credentials (botocore's NoCredentialsError)
LOCKED_STORE = """
import fsspec
from fsspec.spec import AbstractFileSystem
class NoCredentialsError(Exception):
    pass
class LockedStore(AbstractFileSystem):
    protocol = "locked"
    def ls(self, path, detail=True, **kwargs):
        raise NoCredentialsError("Unable to locate credentials")
    def cat_file(self, path, start=None, end=None, **kwargs):
        raise NoCredentialsError("Unable to locate credentials")
fsspec.register_implementation("locked", LockedStore, clobber=True)
"""

STORE_ERRORS = [
    ("show", "locked://bucket/a.jsonl"),
    ("stats", "locked://bucket/runs/"),
    ("diff", "good.jsonl", "locked://bucket/b.jsonl"),
    ("merge", "locked://bucket/out.jsonl", "good.jsonl"),
    ("import", "locked://bucket/dataset/", "o.jsonl"),
]


@pytest.mark.parametrize("args", STORE_ERRORS, ids=[" ".join(a) for a in STORE_ERRORS])
def test_a_store_that_refuses_is_one_line(place: Path, args: tuple[str, ...]) -> None:
    pytest.importorskip("fsspec")
    line = one_line_error(cassette_cli(*args, cwd=place, prelude=LOCKED_STORE))
    assert "NoCredentialsError: Unable to locate credentials" in line, line
    assert line.endswith("check the URL and its credentials"), line


# Ctrl-C as the command opens its input: a real SIGINT, sent by the command to itself (with
# Python's own handler, which a child of a background job would not inherit)
CTRL_C = """
import os, signal
import cassette.storage.remote
signal.signal(signal.SIGINT, signal.default_int_handler)
_local_or_url = cassette.storage.remote.local_or_url
def local_or_url(path):
    os.kill(os.getpid(), signal.SIGINT)
    return _local_or_url(path)
cassette.storage.remote.local_or_url = local_or_url
"""


@pytest.mark.parametrize("args", [("diff", "good.jsonl", "good.jsonl"), ("validate", "good.jsonl")])
def test_ctrl_c_is_one_line_and_exit_130(place: Path, args: tuple[str, ...]) -> None:
    """Not click's "Aborted!" with exit 1, which diff means as "the runs differ" and
    validate as "faults found"; 130, as a shell reports a command stopped by SIGINT."""
    proc = cassette_cli(*args, cwd=place, prelude=CTRL_C)
    line = one_line_error(proc)
    assert proc.returncode == 130, proc.stderr
    assert line == f"error: interrupted; run `cassette {args[0]}` again to finish", line
    assert "Aborted" not in proc.stderr and proc.stdout == ""
