"""The Cassette: the five modes, step keys, strict matching, errors, streams, outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import cassette
from cassette import CassetteMismatch, CassetteMiss, CassetteModeError, Mode, RecordedError
from tests.helpers.chat import Loop, chat_response


class Live:
    """A live function that counts its calls and answers differently each time."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        return chat_response(f"answer {self.calls}")


def run(cas: cassette.Cassette, live: Live, episodes: int = 2, steps: int = 3) -> list[str]:
    out = []
    for env in range(episodes):
        loop = Loop(env)
        with cassette.episode(env):
            for _ in range(steps):
                resp = cas.call(loop.request(), live=live)
                out.append(resp["choices"][0]["message"]["content"])
                loop.answer(resp)
    return out


def test_record_then_replay_serves_the_same_without_calling_live(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    live = Live()
    with cassette.open(path, "record") as cas:
        recorded = run(cas, live)
    assert live.calls == 6
    with cassette.open(path, "replay") as cas:
        assert run(cas, live) == recorded
        assert cas.unused() == []
    assert live.calls == 6


def test_auto_records_when_absent_and_replays_when_present(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    live = Live()
    with cassette.open(path) as cas:
        assert cas.requested_mode is Mode.AUTO and cas.mode is Mode.RECORD
        first = run(cas, live)
    with cassette.open(path) as cas:
        assert cas.mode is Mode.REPLAY
        assert run(cas, live) == first
    assert live.calls == 6


def test_record_overwrites_from_scratch(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    live = Live()
    with cassette.open(path, "record") as cas:
        run(cas, live, episodes=3)
    with cassette.open(path, "record") as cas:
        second = run(cas, live, episodes=1)
    with cassette.open(path, "replay") as cas:
        assert sorted({k[0] for k in cas.index.entries}) == [0]
        assert run(cas, live, episodes=1) == second


def test_append_serves_what_it_has_and_records_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    live = Live()
    with cassette.open(path, "record") as cas:
        first = run(cas, live, episodes=1, steps=2)
    with cassette.open(path, "append") as cas:
        more = run(cas, live, episodes=2, steps=3)
    assert more[:2] == first
    assert live.calls == 2 + 4  # episode 0 step 2 and all of episode 1
    with cassette.open(path, "replay") as cas:
        assert run(cas, live, episodes=2, steps=3) == more
    assert live.calls == 6


def test_passthrough_calls_live_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    live = Live()
    with cassette.open(path, "passthrough") as cas:
        run(cas, live)
        cas.outcome(0, reward=1.0)
    assert live.calls == 6
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_cassette_mode_env_applies_only_where_no_mode_is_passed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.jsonl"
    monkeypatch.setenv("CASSETTE_MODE", "passthrough")
    with cassette.open(path) as cas:
        assert cas.mode is Mode.PASSTHROUGH
    with cassette.open(path, "record") as cas:
        assert cas.mode is Mode.RECORD
    monkeypatch.setenv("CASSETTE_MODE", "bogus")
    with pytest.raises(CassetteModeError, match="use one of replay, record, auto, append"):
        cassette.open(path)
    with pytest.raises(CassetteModeError, match="'strict' or 'key'"):
        cassette.open(path, "replay", match="fuzzy")


def test_replay_miss_says_what_the_episode_holds(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas:
        run(cas, Live(), episodes=2, steps=3)
        cas.call({"tool": "x"}, live=lambda: {"r": 1}, env_index=1, channel="mcp")
    live = Live()
    with cassette.open(path, "replay") as cas:
        with pytest.raises(CassetteMiss) as info:
            cas.call({"x": 1}, live=live, env_index=1, step=3)
        text = str(info.value)
        assert "env_index=1 channel='llm' step=3" in text
        assert "llm: 3 (steps 0-2)" in text and "mcp: 1 (step 0)" in text
        assert "CASSETTE_FORCE_MODE=record" in text and "--cassette-mode" not in text
        with pytest.raises(CassetteMiss, match="holds no episode 7"):
            cas.call({"x": 1}, live=live, env_index=7)
    assert live.calls == 0
    with (
        cassette.open(tmp_path / "none.jsonl", "replay") as cas,
        pytest.raises(CassetteMiss, match="does not exist"),
    ):
        cas.call({}, live=live)


def test_strict_mismatch_names_file_key_and_first_differing_field(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas:
        run(cas, Live(), episodes=1, steps=4)
    loop = Loop(0)
    live = Live()
    with cassette.open(path, "replay") as cas:
        for _ in range(2):
            loop.answer(cas.call(loop.request(), live=live))
        loop.messages[-1]["content"] = "something else entirely"
        with pytest.raises(CassetteMismatch) as info:
            cas.call(loop.request(), live=live)
    text = str(info.value)
    assert f"{path}:4" in text
    assert "env_index=0 channel='llm' step=2" in text
    assert "messages[5].content" in text
    assert "'go on'" in text and "'something else entirely'" in text
    assert text.rstrip().endswith("serve by key alone")
    assert info.value.field == "messages[5].content"
    assert live.calls == 0
    # match="key" serves by key alone, only when asked
    with cassette.open(path, "replay", match="key") as cas:
        served = cas.call({"anything": True}, live=live, step=2)
        assert served["choices"][0]["message"]["content"] == "answer 3"


def test_explicit_step_continues_the_counter(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"n": 5}, live=lambda: {"r": 5}, step=5)
        cas.call({"n": 6}, live=lambda: {"r": 6})
        cas.call({"n": 0}, live=lambda: {"r": 0}, channel="other")
        with pytest.raises(cassette.CassetteError, match="already recorded"):
            cas.call({"n": 6}, live=lambda: {"r": 6}, step=6)
    with cassette.open(path, "replay") as cas:
        assert sorted(cas.index.entries) == [(0, "llm", 5), (0, "llm", 6), (0, "other", 0)]


def test_recorded_errors_replay_as_recorded_error_or_adapter_type(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"

    class Boom(Exception):
        pass

    class Codec:
        def dump(self, exc: BaseException) -> dict[str, Any] | None:
            return {"type": "Boom", "message": str(exc), "data": {"status": 429}}

        def load(self, info: dict[str, Any]) -> BaseException | None:
            return (
                Boom(f"{info['message']} ({info['data']['status']})")
                if info["type"] == "Boom"
                else None
            )

    def fail() -> dict[str, Any]:
        raise Boom("rate limited")

    with cassette.open(path, "record") as cas:
        with pytest.raises(Boom):
            cas.call({"a": 1}, live=fail)
        with pytest.raises(Boom):
            cas.call({"a": 2}, live=fail, errors=Codec())
    with cassette.open(path, "replay") as cas:
        with pytest.raises(RecordedError) as info:
            cas.call({"a": 1}, live=fail)
        assert info.value.type_name.endswith("Boom") and "rate limited" in str(info.value)
        with pytest.raises(Boom, match=r"rate limited \(429\)"):
            cas.call({"a": 2}, live=fail, errors=Codec())


def test_outcome_is_written_in_record_and_ignored_in_replay(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas, cassette.episode("task-1"):
        cas.call({"q": 1}, live=lambda: {"r": 1})
        cas.outcome(reward=1, terminated=True, info={"why": "ok"})
    before = path.read_bytes()
    with cassette.open(path, "replay") as cas:
        assert cas.index.outcomes["task-1"]["reward"] == 1.0
        cas.outcome("task-1", reward=0.0)
    assert path.read_bytes() == before


def test_stream_records_chunks_and_replays_them_in_order(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    seen: list[int] = []

    def live() -> Iterator[dict[str, Any]]:
        for i in range(4):
            seen.append(i)
            yield {"delta": f"part{i}"}

    def assemble(chunks: list[dict[str, Any]]) -> dict[str, Any]:
        return {"role": "assistant", "content": "".join(c["delta"] for c in chunks)}

    with cassette.open(path, "record") as cas:
        it = cas.stream({"q": 1}, live=live, assemble=assemble)
        first = next(it)
        assert first == {"delta": "part0"} and seen == [0]  # handed over as it arrives
        assert [first, *it] == [{"delta": f"part{i}"} for i in range(4)]
    with cassette.open(path, "replay") as cas:
        entry = cas.index.entries[(0, "llm", 0)]
        assert entry.response is not None
        assert entry.response["message"]["content"] == "part0part1part2part3"
        assert list(cas.stream({"q": 1}, live=live)) == [{"delta": f"part{i}"} for i in range(4)]
    assert seen == [0, 1, 2, 3]


def test_stream_error_midway_is_replayed_after_its_chunks(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"

    def live() -> Iterator[dict[str, Any]]:
        yield {"d": 1}
        raise ConnectionError("dropped")

    with cassette.open(path, "record") as cas, pytest.raises(ConnectionError):
        list(cas.stream({"q": 1}, live=live))
    got = []
    with cassette.open(path, "replay") as cas, pytest.raises(RecordedError, match="dropped"):  # noqa: PT012
        for chunk in cas.stream({"q": 1}, live=live):
            got.append(chunk)
    assert got == [{"d": 1}]


def test_async_call_and_stream(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    calls = 0

    async def live() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        return {"n": calls}

    async def chunks() -> AsyncIterator[dict[str, Any]]:
        for i in range(3):
            await asyncio.sleep(0)
            yield {"i": i}

    async def main(mode: str) -> tuple[list[Any], list[Any]]:
        async with cassette.open(path, mode) as cas:
            results = await asyncio.gather(
                *(cas.acall({"env": e}, live=live, env_index=e) for e in range(5))
            )
            streamed = [c async for c in cas.astream({"s": 1}, live=chunks, channel="s")]
            return results, streamed

    recorded = asyncio.run(main("record"))
    assert calls == 5
    assert asyncio.run(main("replay")) == recorded
    assert calls == 5


def test_exception_in_record_block_keeps_old_cassette(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas:
        run(cas, Live(), episodes=1)
    good = path.read_bytes()
    with pytest.raises(KeyError) as info, cassette.open(path, "record") as cas:  # noqa: PT012
        side = cas.side_path
        cas.call({"new": 1}, live=lambda: {"r": "new"})
        raise KeyError("agent crashed")
    assert path.read_bytes() == good
    assert side is not None and side.exists()
    assert any(str(side) in note for note in getattr(info.value, "__notes__", []))
    with cassette.open(side, "replay") as cas:
        assert cas.call({"new": 1}, live=lambda: {}) == {"r": "new"}


def test_closed_cassette_refuses_calls(tmp_path: Path) -> None:
    cas = cassette.open(tmp_path / "a.jsonl", "record")
    cas.close()
    cas.close()  # idempotent
    with pytest.raises(cassette.CassetteError, match="is closed"):
        cas.call({}, live=lambda: {})
    with pytest.raises(cassette.CassetteError, match="must be a dict, not list"):
        cassette.open(tmp_path / "b.jsonl", "passthrough").call([], live=lambda: {})  # type: ignore[arg-type]


def test_ignore_rules_added_after_recording_still_serve_equal_requests(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"q": 1, "trace": "t-1"}, live=lambda: {"r": 1})
        cas.call({"q": 2, "trace": "t-2"}, live=lambda: {"r": 2})
    with cassette.open(path, "replay", ignore=["trace"]) as cas:
        assert cas.call({"q": 1, "trace": "t-9"}, live=lambda: {}) == {"r": 1}
        with pytest.raises(CassetteMismatch, match="first difference at q"):
            cas.call({"q": 3, "trace": "t-9"}, live=lambda: {})


def test_stream_usage_is_taken_from_the_chunk_that_carries_it(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    chunks = [{"d": "a"}, {"d": "b", "usage": None}, {"d": "", "usage": {"total_tokens": 7}}]
    with cassette.open(path, "record") as cas:
        list(cas.stream({"q": 1}, live=lambda: iter(chunks)))
    with cassette.open(path, "replay") as cas:
        assert cas.index.entries[(0, "llm", 0)].meta["usage"] == {"total_tokens": 7}


def test_path_and_mode_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CASSETTE_PATH", raising=False)
    with pytest.raises(CassetteModeError, match="set CASSETTE_PATH"):
        cassette.open()
    monkeypatch.setenv("CASSETTE_PATH", str(tmp_path / "env.jsonl"))
    monkeypatch.setenv("CASSETTE_MODE", "record")
    with cassette.open() as cas:
        cas.call({"q": 1}, live=lambda: {"a": 1})
    monkeypatch.setenv("CASSETTE_MODE", "replay")
    with cassette.open() as cas:
        assert cas.call({"q": 1}, live=lambda: {}) == {"a": 1}


def test_ignore_rules_and_redactions_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with cassette.open(path, "record", ignore=["metadata.trace"]) as cas:
        cas.call({"q": 1, "api_key": "k"}, live=lambda: {"a": 1})
        assert cas.redacted == 1
    with cassette.open(path, "replay") as cas:
        assert cas.index.headers[0]["meta"]["ignore"] == ["metadata.trace"]
