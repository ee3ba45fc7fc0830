"""Cassettes at fsspec URLs, against a real S3 API (moto's server on 127.0.0.1) and
fsspec's in-memory store: every mode, parts that survive SIGKILL, the CLI commands,
the pytest plugin's directory, and the install hint without fsspec."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from tests.helpers.procs import ROOT, Workers
from tests.helpers.s3server import S3
from tests.helpers.worker import request_for, response_for

EP_GOLDEN = Path(__file__).parents[1] / "fixtures" / "cli" / "ep_playback.jsonl"
fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")


def _record(url: str, envs: range, steps: int, mode: str = "record") -> None:
    with cassette.open(url, mode) as cas:
        for env in envs:
            for step in range(steps):
                got = cas.call(
                    request_for(env, step),
                    live=lambda e=env, s=step: response_for(e, s),
                    env_index=env,
                )
                assert got == response_for(env, step)


def _replay(url: str, envs: range, steps: int, *, all_used: bool = True) -> None:
    def offline() -> dict[str, object]:
        raise AssertionError("replay made a live call")

    with cassette.open(url, "replay") as cas:
        assert cas.mode is cassette.Mode.REPLAY
        for env in envs:
            for step in range(steps):
                assert cas.call(request_for(env, step), live=offline, env_index=env) == (
                    response_for(env, step)
                )
        if all_used:
            assert cas.unused() == []


def _keys(s3: S3, prefix: str) -> list[str]:
    fs = fsspec.filesystem("s3")
    return sorted(p.rsplit("/", 1)[-1] for p in fs.find(f"{s3.bucket}/{prefix}"))


def test_shard_directory_round_trip_and_auto(s3: S3) -> None:
    url = s3.url("dir/a/")
    _record(url, range(3), 4)
    (shard,) = _keys(s3, "dir/a")  # one shard, no parts left after a clean close
    assert shard.endswith(".jsonl") and "part" not in shard
    _replay(url, range(3), 4)
    with cassette.open(url) as cas:  # auto: the set exists, so it replays
        assert cas.mode is cassette.Mode.REPLAY
    _record(url, range(1), 1, mode="append")  # append finds step 0 and adds nothing new
    _replay(url, range(3), 4)


def test_single_object_gzip_record_append_replay(s3: S3) -> None:
    url = s3.url("one/a.jsonl.gz")
    _record(url, range(2), 2)
    assert fsspec.filesystem("s3").cat(url)[:2] == b"\x1f\x8b"  # stored compressed
    _record(url, range(2, 3), 2, mode="append")
    _replay(url, range(3), 2)
    _record(url, range(1), 1)  # record replaces the object
    with pytest.raises(cassette.CassetteMiss, match=r"s3://.*a\.jsonl\.gz"):
        _replay(url, range(2), 2)


def test_record_replaces_stale_shards_but_keeps_its_runs_workers(
    s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = s3.url("stale/")
    monkeypatch.setenv("CASSETTE_SHARD", "old")
    _record(url, range(1), 1)
    monkeypatch.setenv("CASSETTE_RUN", "run-7")
    monkeypatch.setenv("CASSETTE_SHARD", "w1")
    _record(url, range(1), 1)
    monkeypatch.setenv("CASSETTE_SHARD", "w2")
    _record(url, range(1, 2), 1)
    assert _keys(s3, "stale") == ["w1.jsonl", "w2.jsonl"]  # old is replaced, w1 kept
    monkeypatch.setenv("CASSETTE_SHARD", "w1")  # w1 opened again in its run: it continues
    _record(url, range(2, 3), 1)
    _replay(url, range(3), 1)


def test_memory_and_file_urls(tmp_path: Path) -> None:
    url = f"memory://cassettes-{os.getpid()}-{time.monotonic_ns()}/m/"
    _record(url, range(2), 3)
    _replay(url, range(2), 3)
    local = f"file://{tmp_path}/f.jsonl"
    _record(local, range(1), 2)
    assert (tmp_path / "f.jsonl").is_file()  # file:// is the local path itself
    _replay(local, range(1), 2)


def test_sigkill_loses_at_most_the_last_part(s3: S3, workers: Workers) -> None:
    """A worker killed with SIGKILL leaves part objects; readers read them as its shard."""
    url = s3.url("killed/")
    os.environ["CASSETTE_PART_SECONDS"] = "0.2"
    try:
        proc = workers.start(url, "record", "--envs", "0,1", "--steps", "5", "--pause-after", "7")
    finally:
        del os.environ["CASSETTE_PART_SECONDS"]
    assert workers.read_line(proc, timeout=60).startswith("READY 7")
    deadline = time.monotonic() + 20
    while not any(k.endswith(".part") for k in _keys(s3, "killed")):
        assert time.monotonic() < deadline, "no part object was uploaded"
        time.sleep(0.1)
    time.sleep(0.5)  # past the part budget: everything written is uploaded
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert all(k.endswith(".part") for k in _keys(s3, "killed"))
    _replay(url, range(1), 5, all_used=False)  # episode 0 whole, 2 calls of episode 1
    with cassette.open(url, "replay") as cas:
        assert len(cas.index.entries) == 7
    result = CliRunner().invoke(main, ["stats", url, "--json"])
    assert result.exit_code == 0, result.output
    assert '"interactions": 7' in result.output.replace(" ", "").replace('":', '": ')


def test_cli_commands_take_urls(s3: S3, tmp_path: Path) -> None:
    url = s3.url("cli/a.jsonl")
    _record(url, range(2), 3)
    runner = CliRunner()
    for args in (["stats", url], ["show", url, "--env", "1"], ["validate", url]):
        result = runner.invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
        assert "s3://" in result.output or "episode" in result.output or "valid" in result.output
    assert runner.invoke(main, ["diff", url, url]).exit_code == 0
    merged = s3.url("cli/merged.jsonl")
    result = runner.invoke(main, ["merge", merged, url])
    assert result.exit_code == 0, result.output
    _replay(merged, range(2), 3)
    assert runner.invoke(main, ["merge", merged, url]).exit_code != 0  # exists: --force
    ep = s3.url("cli/ep_playback.jsonl")
    fsspec.filesystem("s3").pipe_file(ep, EP_GOLDEN.read_bytes())
    gz = s3.url("cli/b.jsonl.gz")
    result = runner.invoke(main, ["convert", "--from", "ep", ep, gz])
    assert result.exit_code == 0, result.output
    assert fsspec.filesystem("s3").cat(gz)[:2] == b"\x1f\x8b"
    assert runner.invoke(main, ["validate", gz]).exit_code == 0
    secret = s3.url("cli/secret.jsonl")
    with cassette.open(secret, "record", redact=cassette.Redactor(extra_keys=())) as cas:
        cas.call({"model": "m", "messages": [], "session_id": "s-123"}, live=lambda: {"a": 1})
    result = runner.invoke(main, ["redact", secret, "--key", "session_id"])
    assert result.exit_code == 0, result.output
    assert b"s-123" not in fsspec.filesystem("s3").cat(secret)
    missing = runner.invoke(main, ["stats", s3.url("cli/nope.jsonl")])
    assert missing.exit_code != 0 and "no such file" in missing.output


def test_pytest_plugin_dir_is_a_url(s3: S3, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_it=textwrap.dedent(
            """
            def test_one(cassette):
                got = cassette.call({"q": 1}, live=lambda: {"a": 1})
                assert got == {"a": 1}
            """
        )
    )
    where = s3.url("plugin")
    pytester.runpytest_subprocess(
        "-p", "no:randomly", f"--cassette-dir={where}", "--cassette-mode=record", "-n0"
    ).assert_outcomes(passed=1)
    assert _keys(s3, "plugin") == ["test_one.jsonl"]
    pytester.runpytest_subprocess(
        f"--cassette-dir={where}", "--cassette-mode=replay", "-n0"
    ).assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("url", "hint"),
    [
        ("s3://b/x/", "pip install 'rollout-cassette[cloud]'"),
        ("gs://b/x/", "pip install 'rollout-cassette[cloud]' gcsfs"),  # both, in one step
    ],
)
def test_a_url_without_fsspec_names_the_extra(tmp_path: Path, url: str, hint: str) -> None:
    code = (
        "import sys; sys.modules['fsspec'] = None; sys.modules['fsspec.core'] = None\n"
        "import cassette\n"
        f"try:\n    cassette.open({url!r}, 'replay')\n"
        "except cassette.CassetteError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout
    assert out.strip().endswith(f"needs fsspec: {hint}") and len(out.strip().splitlines()) == 1


def test_a_store_fsspec_needs_another_package_for_names_that_package() -> None:
    """gs:// with the cloud extra installed (fsspec, s3fs; no gcsfs): the fix is `pip install
    gcsfs`, not the extra the user already has."""
    if importlib.util.find_spec("gcsfs") is not None:
        pytest.skip("gcsfs is installed")
    with pytest.raises(cassette.CassetteError) as caught:
        cassette.open("gs://bucket/x.jsonl", "replay")
    message = str(caught.value)
    assert message.endswith("; pip install gcsfs"), message
    assert "rollout-cassette[cloud]" not in message


def test_a_scheme_fsspec_does_not_know_says_to_check_the_url() -> None:
    with pytest.raises(cassette.CassetteError) as caught:
        cassette.open("foo://bucket/x.jsonl", "replay")
    message = str(caught.value)
    assert "Protocol not known: foo" in message and "check the URL" in message, message
    assert "pip install" not in message  # no package brings a store called foo


class _NoCredentialsError(Exception):
    """What s3fs raises without credentials (botocore's own, not an OSError)."""


class _LockedStore(fsspec.AbstractFileSystem):  # type: ignore[misc]
    protocol = "lockedlib"

    def ls(self, path: str, detail: bool = True, **kwargs: object) -> list[object]:
        raise _NoCredentialsError("Unable to locate credentials")

    def cat_file(self, path: str, start: object = None, end: object = None, **kw: object) -> bytes:
        raise _NoCredentialsError("Unable to locate credentials")


@pytest.mark.parametrize("mode", ["replay", "auto", "append"])
def test_a_store_that_refuses_is_a_cassette_error(mode: str) -> None:
    """Not the storage library's exception out of cassette.open: the one root CassetteError."""
    fsspec.register_implementation("lockedlib", _LockedStore, clobber=True)
    with pytest.raises(cassette.CassetteError) as caught:
        cassette.open("lockedlib://bucket/runs/a.jsonl", mode)
    assert str(caught.value) == (
        "cannot list lockedlib://bucket/runs/a.jsonl: _NoCredentialsError: Unable to locate "
        "credentials; check the URL and its credentials"
    )


def test_export_and_import_through_urls(s3: S3, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    url = s3.url("exp/run/")
    _record(url, range(2), 2)
    ds = s3.url("exp/dataset/")
    result = CliRunner().invoke(main, ["export", url, ds])
    assert result.exit_code == 0, result.output
    assert _keys(s3, "exp/dataset") == ["README.md", "episodes.parquet", "interactions.parquet"]
    back = tmp_path / "back.jsonl"
    result = CliRunner().invoke(main, ["import", ds, str(back)])
    assert result.exit_code == 0, result.output
    _replay(str(back), range(2), 2)
