"""cassette.episode: in threads (with bind / ContextExecutor) and asyncio tasks."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import cassette


def test_episode_nests_and_restores() -> None:
    assert cassette.current_episode() is None
    with cassette.episode(1):
        with cassette.episode("b"):
            assert cassette.current_episode() == "b"
        assert cassette.current_episode() == 1
    assert cassette.current_episode() is None
    with pytest.raises(TypeError):
        cassette.episode(1.5).__enter__()  # type: ignore[arg-type]


def test_plain_thread_does_not_see_it_but_bind_carries_it() -> None:
    seen: dict[str, object] = {}

    def look(name: str) -> None:
        seen[name] = cassette.current_episode()

    with cassette.episode(7):
        t1 = threading.Thread(target=look, args=("plain",))
        t2 = threading.Thread(target=cassette.bind(look), args=("bound",))
        t1.start(), t2.start()
        t1.join(), t2.join()
        with cassette.ContextExecutor(2) as pool:
            assert pool.submit(cassette.current_episode).result() == 7
    assert seen == {"plain": None, "bound": 7}


def test_asyncio_tasks_and_executor_calls_key_by_episode(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"

    async def episode(cas: cassette.Cassette, env: int) -> list[int]:
        with cassette.episode(env):
            out = []
            for step in range(3):
                got = await cas.acall(
                    {"e": env, "s": step}, live=lambda e=env, s=step: _later(e, s)
                )
                out.append(got["v"])
            loop = asyncio.get_running_loop()
            sync = await loop.run_in_executor(
                None, cassette.bind(lambda: cas.call({"sync": env}, live=lambda: {"v": env}))
            )
            out.append(sync["v"])
            return out

    async def _later(e: int, s: int) -> dict[str, int]:
        await asyncio.sleep(0.001 * (5 - e))
        return {"v": e * 10 + s}

    async def main(mode: str) -> list[list[int]]:
        with cassette.open(path, mode) as cas:
            return await asyncio.gather(*(episode(cas, e) for e in range(5)))

    recorded = asyncio.run(main("record"))
    assert recorded == [[e * 10, e * 10 + 1, e * 10 + 2, e] for e in range(5)]
    with cassette.open(path, "replay") as cas:
        keys = set(cas.index.entries)
    assert keys == {(e, "llm", s) for e in range(5) for s in range(4)}
    assert asyncio.run(main("replay")) == recorded
