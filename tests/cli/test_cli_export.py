"""`cassette export` / `cassette import`: a recording (real openai SDK against the
scripted server) published as Parquet tables with a dataset card, read by datasets,
duckdb and pandas, and turned back into a cassette that replays the same offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

import cassette
from cassette.adapters.openai import wrap_openai
from cassette.cli import main
from tests.helpers.chat import MakeServer
from tests.helpers.cli import REPO, cassette_cli, one_line_error

pa = pytest.importorskip("pyarrow")


def _rollout(path: Path, base_url: str, mode: str) -> list[Any]:
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0, timeout=10)
    seen: list[Any] = []
    with cassette.open(path, mode) as cas:
        llm = wrap_openai(client, cas)
        for env in range(3):
            with cassette.episode(env):
                messages: list[Any] = [{"role": "user", "content": f"task {env}"}]
                for _ in range(2):
                    reply = llm.chat.completions.create(model="m", messages=messages)
                    text = reply.choices[0].message.content
                    seen.append(text)
                    messages += [{"role": "assistant", "content": text}]
                    messages += [{"role": "user", "content": "more"}]
                stream = llm.chat.completions.create(model="m", messages=messages, stream=True)
                seen.append([c.choices[0].delta.content for c in stream if c.choices])
            cas.outcome(env, reward=env / 2, terminated=env != 1, info={"task": env})
    return seen


def _export(src: Path | str, out: Path | str, *extra: str) -> str:
    result = CliRunner().invoke(main, ["export", str(src), str(out), *extra])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def recorded(tmp_path: Path, make_server: MakeServer) -> tuple[Path, list[Any], str]:
    server = make_server("echo")
    path = tmp_path / "run.jsonl"
    seen = _rollout(path, server.base_url, "record")
    return path, seen, server.base_url


def test_export_loads_with_datasets_duckdb_and_pandas(
    recorded: tuple[Path, list[Any], str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _, _ = recorded
    out = tmp_path / "ds"
    said = _export(path, out, "--format", "parquet")
    assert "9 interactions, 3 episodes" in said
    card = (out / "README.md").read_text()
    assert card.startswith("---\nconfigs:") and "run id" in card

    pd = pytest.importorskip("pandas")
    inter = pd.read_parquet(out / "interactions.parquet")
    assert len(inter) == 9 and set(inter["env_index"]) == {"0", "1", "2"}
    streamed = inter[inter["stream_chunks"].notna()]
    assert len(streamed) == 3 and all(json.loads(c) for c in streamed["stream_chunks"])
    first = json.loads(inter.iloc[0]["request"])
    assert first["messages"][0]["content"] == "task 0"
    assert json.loads(inter.iloc[0]["usage"])["total_tokens"] > 0
    assert (inter["latency_ms"] >= 0).all()

    duckdb = pytest.importorskip("duckdb")
    rows = duckdb.sql(
        f"SELECT env_index, reward, terminated, steps FROM '{out / 'episodes.parquet'}' "
        "ORDER BY env_index"
    ).fetchall()
    assert rows == [("0", 0.0, True, 3), ("1", 0.5, False, 3), ("2", 1.0, True, 3)]

    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ds = datasets.load_dataset(
        "parquet",
        data_files={"train": str(out / "interactions.parquet")},
        cache_dir=str(tmp_path / "hf"),
    )["train"]
    assert ds.num_rows == 9 and ds[0]["channel"] == "llm"
    eps = datasets.load_dataset(str(out), "episodes", cache_dir=str(tmp_path / "hf2"))
    assert sorted(eps["train"]["reward"]) == [0.0, 0.5, 1.0]


def test_import_replays_identically_and_run_id_survives_copies(
    recorded: tuple[Path, list[Any], str], tmp_path: Path
) -> None:
    path, seen, _ = recorded
    said = _export(path, tmp_path / "ds")
    run_id = said.rsplit("run id ", 1)[1].strip()
    moved = tmp_path / "elsewhere" / "renamed.jsonl"
    moved.parent.mkdir()
    shutil.copy(path, moved)
    assert _export(moved, tmp_path / "ds2").rsplit("run id ", 1)[1].strip() == run_id
    back = tmp_path / "back.jsonl"
    result = CliRunner().invoke(main, ["import", str(tmp_path / "ds"), str(back)])
    assert result.exit_code == 0, result.output
    assert run_id in result.output
    assert _rollout(back, "http://127.0.0.1:9/v1", "replay") == seen  # offline: port 9
    assert CliRunner().invoke(main, ["validate", str(back)]).exit_code == 0
    again = _export(back, tmp_path / "ds3")  # the imported cassette keeps the run id
    assert again.rsplit("run id ", 1)[1].strip() == run_id


def test_export_refuses_a_full_directory_and_a_missing_input(tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    result = CliRunner().invoke(main, ["export", str(tmp_path / "nope.jsonl"), str(tmp_path / "o")])
    assert result.exit_code != 0 and "no such file" in result.output
    src = tmp_path / "a.jsonl"
    with cassette.open(src, "record") as cas:
        cas.call({"q": 1}, live=lambda: {"a": 1})
    result = CliRunner().invoke(main, ["export", str(src), str(tmp_path / "full")])
    assert result.exit_code != 0 and "--force" in result.output


def test_without_pyarrow_export_and_import_say_what_to_install(tmp_path: Path) -> None:
    block = "import sys; sys.modules['pyarrow'] = None\n"
    (tmp_path / "a.jsonl").write_bytes((REPO / "tests/fixtures/cli/run_a.jsonl").read_bytes())
    (tmp_path / "ds").mkdir()
    for args in (("export", "a.jsonl", "out"), ("import", "ds", "back.jsonl")):
        line = one_line_error(cassette_cli(*args, cwd=tmp_path, prelude=block))
        assert line == (
            "error: Parquet export and import need pyarrow: pip install 'rollout-cassette[export]'"
        )
