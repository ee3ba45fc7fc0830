"""A store that fails, against a real S3 API (moto's server on 127.0.0.1): a bucket that
does not exist, no credentials, an endpoint on a closed port, an endpoint that goes away
while recording. Commands print one ``error:`` line ending with the fix (exit 1 when the
store cannot be reached, else 2), upload nothing half-made and leave no private copy
behind; a recording that cannot be uploaded raises CassetteStorageError and keeps what
it recorded in a local file that it names."""

from __future__ import annotations

import re
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.storage import remote, remote_sink
from tests.helpers.s3server import S3, s3_server
from tests.helpers.worker import request_for, response_for

fsspec = pytest.importorskip("fsspec")
pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

EP_GOLDEN = Path(__file__).parents[1] / "fixtures" / "cli" / "ep_playback.jsonl"
FIX = "check the URL and its credentials"
FIX_ENDPOINT = "check the endpoint (AWS_ENDPOINT_URL for S3) and the network"


@pytest.fixture
def private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The directory the private copies go to (tempfile's), to see that none is left."""
    where = tmp_path / "tmp"
    where.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(where))
    return where


def _fresh_s3(monkeypatch: pytest.MonkeyPatch, **env: str | None) -> None:
    """Point s3fs at another endpoint or credentials (its instances are cached)."""
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # a refused connection fails at once
    fsspec.filesystem("s3").clear_instance_cache()


@pytest.fixture
def closed_port(monkeypatch: pytest.MonkeyPatch, s3: S3) -> Iterator[str]:
    """AWS_ENDPOINT_URL on a port of 127.0.0.1 that nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _fresh_s3(monkeypatch, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    yield f"127.0.0.1:{port}"
    fsspec.filesystem("s3").clear_instance_cache()


_CREDENTIALS = (  # where botocore looks for credentials, besides the files
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, s3: S3) -> Iterator[None]:
    none = str(tmp_path / "none")
    files = {"AWS_SHARED_CREDENTIALS_FILE": none, "AWS_CONFIG_FILE": none}
    # and no instance-metadata lookup over the network
    _fresh_s3(monkeypatch, **dict.fromkeys(_CREDENTIALS), **files, AWS_EC2_METADATA_DISABLED="true")
    yield
    fsspec.filesystem("s3").clear_instance_cache()


def _cassette(path: Path, envs: int = 2) -> Path:
    with cassette.open(path, "record") as cas:
        for env in range(envs):
            cas.call(request_for(env, 0), live=lambda e=env: response_for(e, 0), env_index=env)
    return path


def _one_error_line(result: object, code: int, *words: str) -> str:
    """The command failed with ``code`` and said so in one ``error:`` line on stderr,
    with no traceback and no line on stdout saying it was done."""
    assert result.exit_code == code, result.output  # type: ignore[attr-defined]
    assert result.stdout == ""  # type: ignore[attr-defined]
    lines = result.stderr.splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for word in words:
        assert word in lines[0], lines[0]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]
    return str(lines[0])


def _writes(src: Path, url: str) -> list[list[str]]:
    """Every command that writes OUT, writing ``url``."""
    return [
        ["merge", url + ".jsonl", str(src)],
        ["convert", "--from", "ep", str(EP_GOLDEN), url + ".jsonl"],
        ["export", str(src), url + "/"],
    ]


def test_commands_writing_to_a_missing_bucket_say_so_in_one_line(
    s3: S3, tmp_path: Path, private: Path
) -> None:
    src = _cassette(tmp_path / "a.jsonl")
    bucket = f"missing-{s3.bucket}"
    for args in _writes(src, f"s3://{bucket}/out"):
        result = CliRunner().invoke(main, args)
        line = _one_error_line(result, 2, f"s3://{bucket}/out", "bucket does not exist", FIX)
        assert line.startswith("error: cannot upload ")
        assert list(private.iterdir()) == [], args  # no private copy left
    assert not fsspec.filesystem("s3").exists(bucket)


def test_commands_writing_to_a_url_upload_it_and_leave_no_copy(
    s3: S3, tmp_path: Path, private: Path
) -> None:
    pytest.importorskip("pyarrow")
    src = _cassette(tmp_path / "a.jsonl")
    ds, back = s3.url("ok/ds/"), s3.url("ok/back.jsonl")
    for args in (["export", str(src), ds], ["import", ds, back]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith(("exported", "imported")) and result.stderr == ""
        assert list(private.iterdir()) == []  # removed when the command ended
    with cassette.open(back, "replay") as cas:
        assert len(cas.index.entries) == 2


def test_a_directory_upload_that_fails_removes_what_it_added(s3: S3, tmp_path: Path) -> None:
    """The third file's name is not UTF-8, so no store takes it: the two objects the upload
    had added are removed again, and one that it replaced stays (whole)."""
    local = tmp_path / "set"
    local.mkdir()
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        (local / name).write_text(f"{name}\n")
    (local / "c.jsonl").rename(local / "\udcff.jsonl")  # sorts last, cannot be a key
    fs = fsspec.filesystem("s3")
    url = s3.url("half/set/")
    fs.pipe_file(f"{s3.bucket}/half/set/b.jsonl", b"old\n")
    with pytest.raises(cassette.CassetteStorageError) as info:
        remote.upload(local, url)
    message = str(info.value)
    assert message.startswith(f"cannot upload {url}: ") and "\n" not in message
    assert message.endswith(f"the objects it had added were removed; {FIX}")
    assert fs.find(f"{s3.bucket}/half/set") == [f"{s3.bucket}/half/set/b.jsonl"]
    assert fs.cat(f"{s3.bucket}/half/set/b.jsonl") == b"b.jsonl\n"


def test_a_closed_port_is_exit_1(closed_port: str, tmp_path: Path, private: Path) -> None:
    src = _cassette(tmp_path / "a.jsonl")
    reads = [["stats", "s3://b/a.jsonl"], ["import", "s3://b/ds/", str(tmp_path / "o.jsonl")]]
    for args in [*_writes(src, "s3://b/out"), *reads]:
        started = time.monotonic()
        result = CliRunner().invoke(main, args)
        line = _one_error_line(result, 1, "s3://b/", closed_port, "EndpointConnectionError")
        assert line.endswith(FIX_ENDPOINT)
        assert time.monotonic() - started < 30
    assert list(private.iterdir()) == []


def test_no_credentials_is_one_line(no_credentials: None, s3: S3, tmp_path: Path) -> None:
    src = _cassette(tmp_path / "a.jsonl")
    result = CliRunner().invoke(main, ["merge", s3.url("nocred/m.jsonl"), str(src)])
    _one_error_line(result, 2, "NoCredentialsError", FIX)
    with pytest.raises(cassette.CassetteStorageError, match="NoCredentialsError") as info:
        cassette.open(s3.url("nocred/lib.jsonl"), "record")
    assert not info.value.unreachable and info.value.kept is None


# --- the library: nothing recorded is lost ------------------------------------------------


def _record_some(cas: cassette.Cassette, envs: int = 3) -> None:
    for env in range(envs):
        got = cas.call(request_for(env, 0), live=lambda e=env: response_for(e, 0), env_index=env)
        assert got == response_for(env, 0)


def _replays(path: Path, envs: int = 3) -> None:
    with cassette.open(path, "replay") as cas:
        _record_some(cas, envs)  # served from the file: the live calls would be the same,
        assert cas.unused() == []  # and unused() proves every recorded call was replayed


def _kept(exc: cassette.CassetteStorageError) -> Path:
    """The local file the error names, that it also gives as ``kept``; it outlives exit."""
    assert exc.kept is not None and exc.kept.is_file()
    message = str(exc)
    assert "\n" not in message and f"kept in {exc.kept};" in message
    fix = FIX_ENDPOINT if exc.unreachable else FIX
    assert re.search(rf"{re.escape(fix)}, then copy that file to s3://\S+$", message)
    remote._remove_private_dirs()  # what the process does at exit: the file stays
    assert exc.kept.is_file()
    return exc.kept


@pytest.mark.parametrize("where", ["one.jsonl", "one.jsonl.gz", "dir/"])
def test_recording_to_a_missing_bucket_keeps_the_recording(
    s3: S3, where: str, private: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_sink, "PART_SECONDS", 0.05)  # parts fail in the background too
    url = f"s3://missing-{s3.bucket}/run/{where}"
    cas = cassette.open(url, "record")
    _record_some(cas)
    time.sleep(0.3)
    with pytest.raises(cassette.CassetteStorageError, match=r"^cannot upload s3://") as info:
        cas.close()
    assert url.rstrip("/") in str(info.value) and "bucket does not exist" in str(info.value)
    assert not info.value.unreachable
    _replays(_kept(info.value))


def test_an_endpoint_that_goes_away_keeps_the_recording(
    tmp_path: Path, private: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with s3_server() as gone:
        fsspec.filesystem("s3").clear_instance_cache()
        cas = cassette.open(gone.url("run/a.jsonl"), "record")
        _record_some(cas)
    try:
        with pytest.raises(cassette.CassetteStorageError, match="EndpointConnectionError") as info:
            cas.close()
    finally:
        fsspec.filesystem("s3").clear_instance_cache()
    assert info.value.unreachable
    _replays(_kept(info.value))


def test_an_aborted_recording_that_cannot_upload_notes_where_it_is(s3: S3, private: Path) -> None:
    url = f"s3://missing-{s3.bucket}/aborted.jsonl"

    def crashing() -> None:
        with cassette.open(url, "record") as cas:
            _record_some(cas)
            raise RuntimeError("agent crashed")

    with pytest.raises(RuntimeError, match="agent crashed") as info:
        crashing()
    (note,) = info.value.__notes__
    kept = Path(re.search(r"kept in (\S+);", note).group(1))  # type: ignore[union-attr]
    assert note.startswith(f"cassette: cannot upload {url}: ")
    remote._remove_private_dirs()
    for env in range(3):
        assert request_for(env, 0)["messages"][0]["content"] in kept.read_text()
