"""Files and paths: transcripts are created 0600 (or keep the mode of the cassette they
replace), side files are unpredictable and created ``O_EXCL | O_NOFOLLOW``, a planted
symbolic link never receives a transcript, shard names stay inside their directory, and
a path ending in ``/`` stays a shard directory."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.dataset.convert import merge
from cassette.storage import store
from tests.helpers.plugin_project import Project

ROOT = Path(__file__).resolve().parents[2]


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def record(path: Path | str, mode: str = "record", tag: str = "a") -> None:
    with cassette.open(path, mode) as cas:
        cas.call({"q": tag, "secret": "transcript"}, live=lambda: {"a": tag}, env_index=tag)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The most permissive umask: what a file gets is what the code asks for."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


# --- modes -----------------------------------------------------------------------------


@pytest.mark.usefixtures("open_umask")
@pytest.mark.parametrize("name", ["new.jsonl", "new.jsonl.gz"])
def test_new_cassettes_side_files_and_shards_are_0600(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    cas = cassette.open(path, "record")
    assert cas.side_path is not None
    assert mode_of(cas.side_path) == 0o600
    cas.call({"q": 1}, live=lambda: {"a": 1})
    cas.close()
    assert mode_of(path) == 0o600
    appended = tmp_path / f"appended-{name.removesuffix('.gz')}"  # (a .gz is written whole)
    record(appended, "append")
    assert mode_of(appended) == 0o600
    shards = tmp_path / "shards"
    record(f"{shards}/", "append")
    (shard,) = shards.iterdir()
    assert mode_of(shard) == 0o600


@pytest.mark.usefixtures("open_umask")
@pytest.mark.parametrize("old_mode", [0o600, 0o640, 0o644])
def test_re_recording_keeps_the_cassettes_mode(tmp_path: Path, old_mode: int) -> None:
    path = tmp_path / "c.jsonl"
    record(path)
    path.chmod(old_mode)
    record(path, tag="b")  # never widened, never narrowed
    assert mode_of(path) == old_mode
    assert cassette.open(path, "replay").index.entries.keys() == {("b", "llm", 0)}


@pytest.mark.usefixtures("open_umask")
def test_merge_output_is_0600_or_keeps_the_mode_it_replaces(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    record(a, tag="a")
    record(b, tag="b")
    a.chmod(0o644)
    out = tmp_path / "out.jsonl"
    merge(out, [a, b])
    assert mode_of(out) == 0o600
    out.chmod(0o640)
    merge(out, [a, b])
    assert mode_of(out) == 0o640
    assert not list(tmp_path.glob("*.partial"))


# --- side files ------------------------------------------------------------------------


def test_side_file_names_are_unpredictable(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    names = set()
    for _ in range(3):
        cas = cassette.open(path, "record")
        assert cas.side_path is not None
        names.add(cas.side_path.name)
        cas.abort()
    assert len(names) == 3
    assert f"c.jsonl.{os.getpid()}.partial" not in names
    assert all(n.startswith(f"c.jsonl.{os.getpid()}.") for n in names)  # still found by pid


def test_a_link_planted_at_the_old_side_file_name_gets_nothing(tmp_path: Path) -> None:
    stolen = tmp_path / "elsewhere" / "stolen.jsonl"  # where the planter would read it
    stolen.parent.mkdir()
    path = tmp_path / "c.jsonl"
    planted = tmp_path / f"c.jsonl.{os.getpid()}.partial"
    planted.symlink_to(stolen)
    record(path)
    assert not stolen.exists()
    assert path.is_file()
    assert not path.is_symlink()
    assert planted.is_symlink()  # not used, not removed


def test_exclusive_writer_refuses_an_existing_file_or_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "side.partial"
    link.symlink_to(victim)
    with pytest.raises(cassette.CassetteError, match=r"already exists.*remove it"):
        store.Writer(link, mode=0o600)
    dangling = tmp_path / "dangling.partial"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(cassette.CassetteError, match="already exists"):
        store.Writer(dangling, mode=0o600)
    assert not (tmp_path / "nowhere").exists()
    assert victim.read_text() == "keep me\n"


# --- a link at the cassette path -------------------------------------------------------


def test_record_replaces_a_link_at_the_cassette_path_not_its_target(tmp_path: Path) -> None:
    victim = tmp_path / "victim.jsonl"
    victim.write_text("keep me\n")
    path = tmp_path / "c.jsonl"
    path.symlink_to(victim)
    record(path)
    assert victim.read_text() == "keep me\n"
    assert path.is_file()
    assert not path.is_symlink()
    assert mode_of(path) == 0o600


def test_append_refuses_a_link_at_the_cassette_path(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"")
    path = tmp_path / "c.jsonl"
    path.symlink_to(victim)
    with pytest.raises(cassette.CassetteError, match=r"is a symbolic link.*real path"):
        record(path, "append")
    assert victim.read_bytes() == b""


def test_a_link_planted_at_the_lock_file_is_refused_naming_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"")
    path = tmp_path / "c.jsonl"
    path.with_name("c.jsonl.lock").symlink_to(victim)
    with pytest.raises(cassette.CassetteError) as caught:
        record(path)
    assert str(caught.value) == (
        f"cannot record {path}: cannot create its lock file c.jsonl.lock (Too many levels of "
        "symbolic links); it is a link: remove it"
    )
    assert victim.read_bytes() == b""


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("mode", ["record", "append"])
def test_a_directory_that_cannot_be_created_is_a_cassette_error(mode: str) -> None:
    """Not the OS's FileNotFoundError or PermissionError: the one root CassetteError
    (/proc/self takes no new directory, whoever asks)."""
    with pytest.raises(cassette.CassetteError) as caught:
        record("/proc/self/runs/a.jsonl", mode)
    assert str(caught.value) == "no such file or directory: /proc/self/runs; check the path"
    assert isinstance(caught.value, cassette.CassettePathError)


# --- shard names and directories -------------------------------------------------------


@pytest.mark.parametrize("shard", ["../x", "ABSOLUTE", "sub/x", ".hidden", "a..b", "x\n"])
def test_bad_shard_names_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shard: str
) -> None:
    shards = tmp_path / "run" / "shards"
    shards.mkdir(parents=True)
    shard = str(tmp_path / "abs") if shard == "ABSOLUTE" else shard
    monkeypatch.setenv("CASSETTE_SHARD", shard)
    for mode in ("append", "record"):
        with pytest.raises(cassette.CassetteModeError, match=r"CASSETTE_SHARD=.*e\.g\."):
            record(shards, mode)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["run", "shards"]


def test_good_shard_names_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASSETTE_SHARD", "worker-3.gpu_0")
    record(f"{tmp_path / 'shards'}/", "append")
    assert [p.name for p in (tmp_path / "shards").iterdir()] == ["worker-3.gpu_0.jsonl"]


def test_cassette_run_keeps_the_trailing_slash_of_a_shard_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = (
        "import cassette\n"
        "with cassette.open() as cas:\n"
        "    cas.call({'q': 1}, live=lambda: {'a': 1})\n"
    )
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    target = f"{tmp_path / 'shards'}/"
    argv = ["run", "--mode", "record", "--cassette", target, "--", sys.executable, "-c", script]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 0, result.output
    shards = tmp_path / "shards"
    assert shards.is_dir()
    assert [p.suffix for p in shards.iterdir()] == [".jsonl"]


def test_plugin_marker_path_ending_in_slash_is_a_shard_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Project(pytester, monkeypatch)
    project.module(
        "test_sharded",
        """
        @pytest.mark.cassette(path="shards/")
        def test_sharded(cassette):
            cassette.call({"q": "s"}, live=live("s"))
        """,
    )
    project.run("--cassette-mode=record").assert_outcomes(passed=1)
    shards = project.cassettes / "shards"
    assert shards.is_dir()
    assert [p.suffix for p in shards.iterdir()] == [".jsonl"]
    project.run().assert_outcomes(passed=1)
    assert project.live_calls() == ["s"]
