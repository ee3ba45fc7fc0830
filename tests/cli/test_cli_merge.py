"""`cassette merge`: shards or runs into one cassette, refusing key collisions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cassette
from cassette.cli import main
from cassette.storage.index import load_index

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "cli"
RUN_A, RUN_B = GOLDEN / "run_a.jsonl", GOLDEN / "run_b.jsonl"


def merge(*args: str | Path) -> Result:
    return CliRunner().invoke(main, ["merge", *map(str, args)])


def assert_serves_like(merged: Path, source: Path, rename: str = "") -> None:
    """Every full request of ``source`` replays from ``merged`` with its recorded answer."""
    index = load_index([source])
    with cassette.open(merged, "replay") as cas:
        for entry, request in index.iter_full():
            env = f"{rename}{entry.env_index}" if rename else entry.env_index
            key = {"env_index": env, "channel": entry.channel, "step": entry.step}
            if entry.error is not None:
                with pytest.raises(cassette.RecordedError):
                    cas.call(request, live=lambda: {}, **key)
            elif "chunks" in (entry.response or {}):
                assert (
                    list(cas.stream(request, live=lambda: iter([]), **key))
                    == (
                        entry.response["chunks"]  # type: ignore[index]
                    )
                )
            else:
                assert cas.call(request, live=lambda: {}, **key) == entry.response


def test_shards_merge_into_one_valid_file(tmp_path: Path) -> None:
    out = tmp_path / "all.jsonl"
    result = merge(out, GOLDEN / "shards")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"merged 1 input into {out}: 8 interactions, 4 outcomes, 4 episodes\n"
    assert CliRunner().invoke(main, ["validate", str(out)]).exit_code == 0
    assert_serves_like(out, GOLDEN / "shards")
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    shards_id = load_index([GOLDEN / "shards"]).headers[0]["meta"]["run_id"]
    assert lines[0]["meta"] == {
        "source": "tests/fixtures/cli/make_golden.py (scripted, deterministic)",  # all agree
        "merged_from": [str(GOLDEN / "shards")],  # not "worker", which each shard names
        "run_id": shards_id,
    }
    assert sum("delta" in line for line in lines) == 4  # deltas re-encoded in the output


def test_the_header_meta_the_inputs_agree_on_is_kept(tmp_path: Path) -> None:
    """The ignore rules the hashes were made with, tau2's settings: without them a merged
    tau2 run was "not a `cassette tau2` recording" and a merge of a run recorded with
    ignore rules failed `cassette validate`."""
    request = {"model": "m", "temperature": 0.5, "messages": [{"role": "user", "content": "x"}]}
    for name, tau2 in (("a.jsonl", {"domain": "mock"}), ("b.jsonl", {"domain": "airline"})):
        meta = {"tau2": tau2}
        with cassette.open(tmp_path / name, "record", ignore=["temperature"], meta=meta) as cas:
            cas.call(request, live=lambda: {"a": 1}, env_index=name)
    out = tmp_path / "one.jsonl"
    assert merge(out, tmp_path / "a.jsonl").exit_code == 0
    meta = json.loads(out.read_text().splitlines()[0])["meta"]
    assert meta["ignore"] == ["temperature"] and meta["tau2"] == {"domain": "mock"}
    assert CliRunner().invoke(main, ["validate", str(out)]).exit_code == 0
    both = tmp_path / "both.jsonl"
    assert merge(both, tmp_path / "a.jsonl", tmp_path / "b.jsonl").exit_code == 0
    meta = json.loads(both.read_text().splitlines()[0])["meta"]
    assert meta["ignore"] == ["temperature"] and "tau2" not in meta  # the runs disagree


def test_hashes_and_meta_are_kept(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    assert merge(out, RUN_A).exit_code == 0
    src = load_index([RUN_A]).entries
    got = load_index([out]).entries
    assert got.keys() == src.keys()
    for key, entry in src.items():
        assert got[key].sha == entry.sha and got[key].meta == entry.meta
    assert_serves_like(out, RUN_A)


def test_a_collision_is_refused_naming_the_key_and_both_files(tmp_path: Path) -> None:
    out = tmp_path / "both.jsonl"
    result = merge(out, RUN_A, RUN_B)
    assert result.exit_code == 2 and not out.exists()
    assert result.stderr == (
        f"error: key (env_index=0, channel='llm', step=0) is in both {RUN_A}:2 and {RUN_B}:2; "
        "pass --on-conflict first|last|renumber to say which to keep\n"
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("policy", "winner", "loser"), [("first", RUN_A, RUN_B), ("last", RUN_B, RUN_A)]
)
def test_first_and_last_keep_whole_episodes(
    tmp_path: Path, policy: str, winner: Path, loser: Path
) -> None:
    out = tmp_path / "both.jsonl"
    result = merge(out, RUN_A, RUN_B, "--on-conflict", policy)
    assert result.exit_code == 0, result.output
    assert f"dropped episode 'airline/task-3' of {loser} (--on-conflict {policy})" in result.stdout
    assert_serves_like(out, winner)
    reward = load_index([out]).outcomes["airline/task-3"]["reward"]
    assert reward == load_index([winner]).outcomes["airline/task-3"]["reward"]


def test_renumber_prefixes_every_episode_with_its_input_stem(tmp_path: Path) -> None:
    out = tmp_path / "both.jsonl"
    result = merge(out, RUN_A, RUN_B, "--on-conflict", "renumber")
    assert result.exit_code == 0, result.output
    assert "15 interactions, 6 outcomes, 6 episodes" in result.stdout
    assert f"episodes of {RUN_A} are now run_a/<env_index>" in result.stdout
    index = load_index([out])
    assert sorted(index.outcomes) == sorted(
        f"{run}/{env}" for run in ("run_a", "run_b") for env in ("0", "1", "airline/task-3")
    )
    assert_serves_like(out, RUN_A, rename="run_a/")
    assert_serves_like(out, RUN_B, rename="run_b/")


def test_same_stems_get_numbered_and_ep_files_merge_too(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    twin = shutil.copy(RUN_A, tmp_path / "x" / "run_a.jsonl")
    out = tmp_path / "out.jsonl"
    result = merge(out, RUN_A, twin, GOLDEN / "ep_playback.jsonl", "--on-conflict", "renumber")
    assert result.exit_code == 0, result.output
    envs = set(load_index([out]).episodes())
    assert {"run_a/0", "run_a-2/0", "ep_playback/0"} <= envs
    assert CliRunner().invoke(main, ["validate", str(out)]).exit_code == 0


def test_out_exists_needs_force_and_may_be_an_input(tmp_path: Path) -> None:
    out = tmp_path / "a.jsonl"
    shutil.copy(RUN_A, out)
    result = merge(out, out, GOLDEN / "shards", "--on-conflict", "renumber")
    assert result.exit_code == 2
    assert (
        result.stderr
        == f"error: {out} exists; pass --force to overwrite it, or name another file\n"
    )
    result = merge(out, out, GOLDEN / "shards", "--on-conflict", "renumber", "--force")
    assert result.exit_code == 0, result.output
    assert "16 interactions, 7 outcomes, 7 episodes" in result.stdout
    assert not [p for p in tmp_path.iterdir() if p != out]


def test_missing_inputs_and_no_inputs_exit_2(tmp_path: Path) -> None:
    result = merge(tmp_path / "o.jsonl", RUN_A, tmp_path / "missing.jsonl")
    assert result.exit_code == 2 and "no such file or directory" in result.stderr
    result = merge(tmp_path / "o.jsonl")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert "Missing argument 'IN...'" in result.stderr


def test_an_output_that_cannot_be_created_is_one_plain_line() -> None:
    """The reason once, then the fix (it read "[Errno 2] No such file or directory: '...'",
    the side file's path twice)."""
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc, where no file can be created")
    result = merge("/proc/self/out.jsonl", RUN_A)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: cannot open /proc/self/out.jsonl.")
    assert result.stderr.endswith(
        ".partial for writing (No such file or directory); write it in a directory you can "
        "write to, or change its rights\n"
    )
    assert "Errno" not in result.stderr
