"""cassette.diff on golden cassettes (tests/fixtures/diff, made by make_golden.py) and the
`cassette diff` command."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import cassette
from cassette.cli import main
from cassette.diff import VOLATILE, RunDiff, diff_runs, tool_calls_of
from cassette.storage.index import Entry, load_index

GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "diff"
A, RERUN, B = GOLDEN / "run_a.jsonl", GOLDEN / "run_a_rerun.jsonl", GOLDEN / "run_b.jsonl"
CITY = "response.choices[0].message.tool_calls[0].function.arguments.city"


@pytest.fixture(scope="module")
def ab() -> RunDiff:
    return diff_runs(A, B)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_golden_files_are_reproducible(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_golden", GOLDEN / "make_golden.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for made in module.make_all(tmp_path):
        assert made.read_bytes() == (GOLDEN / made.name).read_bytes(), made.name


def test_a_rerun_with_other_ids_is_equivalent_and_lists_what_it_ignored() -> None:
    d = diff_runs(A, RERUN)
    assert d.equivalent
    assert {e.status for e in d.episodes} == {"identical"}
    assert d.volatile_seen == [
        "request.messages[*].tool_call_id",
        "response.choices[*].message.tool_calls[*].id",
        "response.created",
        "response.id",
        "response.system_fingerprint",
    ]
    assert set(VOLATILE) <= set(d.ignored)
    assert {"meta.latency_ms", "meta.recorded_at"} <= set(d.ignored)


def test_a_run_against_itself_sees_nothing_volatile() -> None:
    d = diff_runs(A, A)
    assert d.equivalent and d.volatile_seen == []
    assert d.counts["identical"] == 5


def test_statuses(ab: RunDiff) -> None:
    assert [(e.env_index, e.status) for e in ab.episodes] == [
        (0, "identical"),
        (1, "diverged"),
        (2, "diverged"),
        (3, "only_a"),
        (4, "only_b"),
        (5, "diverged"),
    ]
    assert not ab.equivalent


def test_first_divergence_names_channel_step_path_and_values(ab: RunDiff) -> None:
    d = ab.episode(1).divergence
    assert d is not None
    assert (d.channel, d.step, d.part, d.path) == ("llm", 2, "response", CITY)
    assert (d.a, d.b) == ("Lyon", "Paris")
    d2 = ab.episode(2).divergence
    assert d2 is not None
    assert (d2.channel, d2.step, d2.path) == ("llm", 1, "response.choices[0].message.content")
    assert (d2.a, d2.b) == ("Rainy and cold, about 6°C.", "Rainy.")
    assert ab.episode(0).divergence is None and ab.episode(3).divergence is None


def test_tool_call_sequences_of_both_sides(ab: RunDiff) -> None:
    ep = ab.episode(1)
    seq_a = [(c.step, c.name, c.arguments) for c in ep.tool_calls_a]
    seq_b = [(c.step, c.name, c.arguments) for c in ep.tool_calls_b]
    assert seq_a == [
        (0, "get_weather", {"city": "Paris"}),
        (1, "get_weather", {"city": "Lyon"}),
        (2, "book_trip", {"city": "Lyon", "date": "2026-06-01"}),
    ]
    assert seq_b[:2] == seq_a[:2]
    assert seq_b[2] == (2, "book_trip", {"city": "Paris", "date": "2026-06-01"})
    assert [c.name for c in ab.episode(3).tool_calls_a] == ["get_weather", "get_weather"]
    assert ab.episode(3).tool_calls_b == []


def test_rewards_and_summary_numbers(ab: RunDiff) -> None:
    deltas = {e.env_index: (e.reward_a, e.reward_b, e.delta, e.change) for e in ab.episodes}
    assert deltas[1] == (1.0, 0.0, -1.0, "regressed")
    assert deltas[2] == (0.0, 1.0, 1.0, "improved")
    assert deltas[5] == (1.0, 1.0, 0.0, "unchanged")
    assert deltas[3] == (1.0, None, None, None)
    assert deltas[4] == (None, 0.5, None, None)
    counts = ab.counts
    assert (counts["improved"], counts["regressed"], counts["unchanged"]) == (1, 1, 2)
    assert (counts["identical"], counts["diverged"], counts["only_a"], counts["only_b"]) == (
        1,
        3,
        1,
        1,
    )
    assert ab.a.mean_reward == pytest.approx(0.8)
    assert ab.b.mean_reward == pytest.approx(0.7)
    for run, path in ((ab.a, A), (ab.b, B)):
        usage = [
            line["response"]["usage"]
            for line in _lines(path)
            if line["type"] == "interaction" and "usage" in (line["response"] or {})
        ]
        assert run.prompt_tokens == sum(u["prompt_tokens"] for u in usage)
        assert run.completion_tokens == sum(u["completion_tokens"] for u in usage)
        assert run.total_tokens == sum(u["total_tokens"] for u in usage)
        assert run.cost == pytest.approx(sum(u["cost"] for u in usage))
        assert run.episodes == 5 and run.label == str(path)


def test_ignoring_the_differing_path_makes_the_episode_identical() -> None:
    content = "response.choices[0].message.content"
    assert not diff_runs(A, B, env=5).equivalent
    d = diff_runs(A, B, env=5, ignore=[content])
    assert d.equivalent and d.episode(5).status == "identical"
    assert content in d.ignored
    assert diff_runs(A, B, env=5, ignore=["**.content"]).equivalent


def test_ignoring_an_argument_moves_the_divergence_downstream() -> None:
    d = diff_runs(A, B, env=1, ignore=[CITY]).episode(1).divergence
    assert d is not None
    assert (d.channel, d.step, d.part, d.path) == (
        "mcp",
        2,
        "request",
        "request.params.arguments.city",
    )
    assert (d.a, d.b) == ("Lyon", "Paris")


def test_an_outcome_that_alone_differs_is_a_divergence() -> None:
    d = diff_runs(A, B, env=2, ignore=["response.choices[*].message.content"])
    div = d.episode(2).divergence
    assert div is not None
    assert (div.part, div.path, div.a, div.b) == ("outcome", "outcome.reward", 0.0, 1.0)
    assert diff_runs(A, B, env=2, ignore=["**.content", "outcome.reward"]).equivalent


def _record(path: Path, prompts: list[str], reward: float = 1.0) -> None:
    with cassette.open(path, "record") as cas:
        messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
        for i, prompt in enumerate(prompts):
            messages.append({"role": "user", "content": prompt})
            answer = {"role": "assistant", "content": f"ok {i}"}
            req = {"model": "m", "messages": list(messages), "temperature": 0}
            cas.call(req, live=lambda a=answer: {"choices": [{"message": a}]}, env_index=0)
            messages.append(answer)
        cas.outcome(0, reward=reward)


def test_a_step_missing_on_one_side_is_a_divergence(tmp_path: Path) -> None:
    _record(tmp_path / "a.jsonl", ["one", "two", "three"])
    _record(tmp_path / "b.jsonl", ["one", "two"])
    d = diff_runs(tmp_path / "a.jsonl", tmp_path / "b.jsonl").episode(0).divergence
    assert d is not None
    assert (d.channel, d.step, d.part, d.a_missing, d.b_missing) == ("llm", 2, "step", False, True)


def test_a_request_divergence_inside_a_delta_encoded_request(tmp_path: Path) -> None:
    _record(tmp_path / "a.jsonl", ["one", "two", "three"])
    _record(tmp_path / "b.jsonl", ["one", "two", "3"])
    d = diff_runs(tmp_path / "a.jsonl", tmp_path / "b.jsonl").episode(0).divergence
    assert d is not None
    assert (d.step, d.part, d.path, d.a, d.b) == (
        2,
        "request",
        "request.messages[5].content",
        "three",
        "3",
    )
    assert diff_runs(
        tmp_path / "a.jsonl", tmp_path / "b.jsonl", ignore=["messages[*].content"]
    ).equivalent


def test_indexes_shard_directories_env_filter_and_progress(tmp_path: Path) -> None:
    shards = tmp_path / "shards"
    shards.mkdir()
    shutil.copy(B, shards / "worker-1.jsonl")
    seen: list[tuple[int, int]] = []
    d = diff_runs(load_index([A]), shards, progress=lambda done, total: seen.append((done, total)))
    assert d.a.label == "A" and d.b.label == str(shards)
    assert d.counts == diff_runs(A, B).counts
    assert seen[-1] == (6, 6)
    one = diff_runs(A, B, env="1")  # a digit string finds the int env_index
    assert [e.env_index for e in one.episodes] == [1] and one.a.episodes == 1
    with pytest.raises(ValueError, match="neither run"):
        diff_runs(A, B, env=99)
    with pytest.raises(ValueError, match="cannot parse ignore path"):
        diff_runs(A, B, ignore=["messages[x"])


def test_to_dict_is_plain_json(ab: RunDiff) -> None:
    data = orjson.loads(orjson.dumps(ab.to_dict()))
    assert data["format"] == "rollout-cassette/diff" and data["equivalent"] is False
    assert {"a", "b", "episodes", "ignored", "volatile_seen", "counts"} <= data.keys()
    ep1 = data["episodes"][1]
    assert ep1["divergence"]["path"] == CITY and ep1["delta"] == -1.0
    assert ep1["tool_calls_b"][2] == {
        "channel": "llm",
        "step": 2,
        "name": "book_trip",
        "arguments": {"city": "Paris", "date": "2026-06-01"},
    }


def _entry(response: dict[str, Any], meta: dict[str, Any] | None = None) -> Entry:
    line = {"env_index": 0, "step": 3, "request": {}, "response": response, "meta": meta or {}}
    return Entry.of(line)


def test_tool_calls_of_responses_api_and_streams() -> None:
    responses = _entry(
        {
            "output": [
                {"type": "function_call", "name": "f", "arguments": '{"x": 1}', "call_id": "c"}
            ]
        }
    )
    stream = _entry(
        {
            "chunks": [],
            "message": {"tool_calls": [{"function": {"name": "g", "arguments": "oops"}}]},
        }
    )
    assert [(c.name, c.arguments, c.step) for c in tool_calls_of(responses)] == [("f", {"x": 1}, 3)]
    assert [(c.name, c.arguments) for c in tool_calls_of(stream)] == [("g", "oops")]


def test_usage_and_cost_from_other_shapes(tmp_path: Path) -> None:
    with cassette.open(tmp_path / "r.jsonl", "record") as cas:
        cas.call({"input": "a"}, live=lambda: {"usage": {"input_tokens": 5, "output_tokens": 2}})
        cas.call(
            {"input": "b"},
            live=lambda: {"usage": {"prompt_tokens": 1}, "_hidden_params": {"response_cost": 0.5}},
        )
    d = diff_runs(tmp_path / "r.jsonl", tmp_path / "r.jsonl")
    assert (d.a.prompt_tokens, d.a.completion_tokens, d.a.total_tokens) == (6, 2, 8)
    assert d.a.cost == pytest.approx(0.5)


# --- the command ---------------------------------------------------------------------------


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["diff", *args])


def test_cli_exit_0_when_equivalent() -> None:
    result = _run(str(A), str(RERUN))
    assert result.exit_code == 0, result.output
    assert "equivalent: all 5 episodes identical" in result.output
    assert "response.id" in result.output  # the volatile fields it ignored


def test_cli_exit_1_when_different_with_text() -> None:
    result = _run(str(A), str(B))
    assert result.exit_code == 1, result.output
    out = result.output
    assert "episode 1  diverged" in out and "llm step 2" in out and CITY in out
    assert '"Lyon"' in out and '"Paris"' in out
    assert "mean reward" in out and "0.8" in out and "0.7" in out
    assert "not equivalent: 3 diverged, 1 only in A, 1 only in B" in out
    assert "\x1b[" not in out  # not a terminal: no colour


def test_cli_html_to_a_url_is_uploaded_not_a_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--html s3://...` used to write ./s3:/bucket/...; it goes to the store, as every
    other output of the command line does (here fsspec's in-memory store)."""
    fsspec = pytest.importorskip("fsspec")
    monkeypatch.chdir(tmp_path)
    url = "memory://newuser5-reports/diff.html"
    result = _run(str(A), str(B), "--html", url)
    assert result.exit_code == 1, result.output
    assert f"wrote {url}" in result.stderr
    page = fsspec.filesystem("memory").cat("/newuser5-reports/diff.html")
    assert page.startswith(b"<!doctype html>")
    assert list(tmp_path.iterdir()) == []  # no local folder named "memory:"


def test_cli_json_markdown_and_html(tmp_path: Path) -> None:
    result = _run(str(A), str(B), "--format", "json", "--env", "1")
    assert result.exit_code == 1
    data = orjson.loads(result.stdout)
    assert [e["env_index"] for e in data["episodes"]] == [1]
    result = _run(str(A), str(B), "--format", "markdown")
    assert result.exit_code == 1
    assert result.stdout.index("### Regressed") < result.stdout.index("### Other diverged")
    out = tmp_path / "report.html"
    result = _run(str(A), str(B), "--html", str(out), "--ignore", "**.content")
    assert result.exit_code == 1
    assert out.read_text().startswith("<!doctype html>") and "wrote" in result.stderr


def test_cli_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    result = _run(str(A), str(tmp_path / "missing.jsonl"))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and "missing.jsonl" in result.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(A.read_text().splitlines()[0] + "\n{not json\n" + "{}\n")
    result = _run(str(A), str(bad))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "bad.jsonl:2" in result.stderr
    assert "cassette validate" in result.stderr
    result = _run(str(A), str(B), "--env", "nope")
    assert result.exit_code == 2 and "neither run" in result.stderr
    assert result.stderr.rstrip().endswith("; pick one of those")
    result = _run(str(A), str(B), "--format", "yaml")
    assert result.exit_code == 2


def test_cli_help_has_examples() -> None:
    result = CliRunner().invoke(main, ["diff", "--help"])
    assert result.exit_code == 0
    assert (
        "Examples:" in result.output and "cassette diff runs/a.jsonl runs/b.jsonl" in result.output
    )
    assert "--ignore" in result.output and "--html" in result.output


def _responses_run(path: Path, tag: str, x: int) -> None:
    """A Responses API run (input items, output items) and a streamed chat call."""
    with cassette.open(path, "record") as cas:
        call = {"type": "function_call", "id": f"fc_{tag}", "call_id": f"call_{tag}"}
        call |= {"name": "f", "arguments": f'{{"x": {x}}}'}
        out = {"id": f"resp_{tag}", "created_at": len(tag), "output": [call]}
        req: dict[str, Any] = {"model": "m", "input": [{"role": "user", "content": "hi"}]}
        cas.call(req, live=lambda: out)
        req = {"model": "m", "input": [*req["input"], call, {"type": "function_call_output"}]}
        req["input"][-1] |= {"call_id": f"call_{tag}", "output": "1"}
        cas.call(req, live=lambda: {"id": f"resp2_{tag}", "output": []})
        chunks = [{"id": f"c_{tag}", "created": 1, "choices": [{"delta": {"content": "ok"}}]}]
        for chunk in cas.stream({"model": "m", "messages": []}, live=lambda: iter(chunks)):
            assert chunk


def test_responses_api_and_streams_ignore_their_generated_ids(tmp_path: Path) -> None:
    _responses_run(tmp_path / "a.jsonl", "a", 1)
    _responses_run(tmp_path / "b.jsonl", "bb", 1)
    _responses_run(tmp_path / "c.jsonl", "c", 2)
    same = diff_runs(tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert same.equivalent, same.episodes
    assert {"response.output[*].id", "response.chunks[*].id"} <= set(same.volatile_seen)
    d = diff_runs(tmp_path / "a.jsonl", tmp_path / "c.jsonl").episode(0)
    assert d.divergence is not None
    assert (d.divergence.step, d.divergence.path) == (0, "response.output[0].arguments.x")
    assert [(c.name, c.arguments) for c in d.tool_calls_b] == [("f", {"x": 2})]


def test_eval_protocol_playback_files(tmp_path: Path) -> None:
    def write(path: Path, answer: str) -> None:
        msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": answer}]
        path.write_bytes(orjson.dumps({"env_index": 0, "step": 0, "messages": msgs}) + b"\n")

    write(tmp_path / "a.jsonl", "hello")
    write(tmp_path / "b.jsonl", "hello")
    write(tmp_path / "c.jsonl", "bye")
    assert diff_runs(tmp_path / "a.jsonl", tmp_path / "b.jsonl").equivalent
    d = diff_runs(tmp_path / "a.jsonl", tmp_path / "c.jsonl").episode(0).divergence
    assert d is not None and (d.path, d.a, d.b) == (
        "response.choices[0].message.content",
        "hello",
        "bye",
    )


def test_a_missing_run_is_a_cassette_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nothere.jsonl"
    with pytest.raises(cassette.CassetteError, match=r"^no such file or directory: .*nothere"):
        diff_runs(GOLDEN / "run_a.jsonl", missing)
