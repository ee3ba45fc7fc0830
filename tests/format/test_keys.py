"""Keys and outcomes the file format cannot read back are refused at the call, in one
line, before the live call and before anything is written: the cassette stays readable.
Each test fails on a cassette that wrote them (every later open then failed) or let a
ValueError/TypeError out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cassette
from cassette import CassetteError


def _request(n: int = 0) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"q{n}"}]}


def _answer() -> dict[str, Any]:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": "a"}}]}


@pytest.mark.parametrize(
    ("key", "says"),
    [
        ({"env_index": 1.5}, "env_index must be an int (64-bit) or a str, not float"),
        ({"env_index": True}, "env_index must be an int (64-bit) or a str, not bool"),
        # equal to the episode 0 checked before: still refused
        ({"env_index": False}, "env_index must be an int (64-bit) or a str, not bool"),
        ({"env_index": 0.0}, "env_index must be an int (64-bit) or a str, not float"),
        ({"env_index": 2**70}, "env_index must be an int (64-bit) or a str, not int"),
        ({"env_index": ("a", 1)}, "env_index must be an int (64-bit) or a str, not tuple"),
        ({"channel": 3}, "channel must be a str, not int"),
        ({"step": -1}, "step must be 0 or more, not -1"),
        ({"step": "2"}, "step must be an int, not str"),
        ({"step": 1.0}, "step must be an int, not float"),
    ],
)
@pytest.mark.parametrize("mode", ["record", "append"])
def test_a_key_the_file_cannot_hold_is_refused_before_the_live_call(
    tmp_path: Path, key: dict[str, Any], says: str, mode: str
) -> None:
    path = tmp_path / "c.jsonl"
    live_calls = []
    with cassette.open(path, mode) as cas:
        cas.call(_request(), live=_answer, env_index=0)
        with pytest.raises(CassetteError, match="; pass ") as raised:
            cas.call(_request(1), live=lambda: live_calls.append(1) or _answer(), **key)
        assert says in str(raised.value) and "\n" not in str(raised.value)
        cas.call(_request(2), live=_answer, env_index=0)  # the cassette goes on
    assert live_calls == []
    with cassette.open(path, "replay") as cas:  # and it still reads
        assert cas.call(_request(), live=_answer, env_index=0) == _answer()
        assert len(cas.index.entries) == 2


def test_a_bad_step_in_replay_is_the_same_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call(_request(), live=_answer)
    with cassette.open(path, "replay") as cas, pytest.raises(CassetteError, match="step must"):
        cas.call(_request(), live=_answer, step="0")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("outcome", "says"),
    [
        ({"reward": "high"}, "reward must be a number or None, not str ('high'); pass a float"),
        ({"reward": True}, "reward must be a number or None, not bool"),
        ({"reward": float("nan")}, "cannot store the reward nan"),
        ({"reward": float("-inf")}, "cannot store the reward -inf"),
        ({"terminated": "yes"}, "terminated must be a bool or None, not str"),
        ({"info": [1, 2]}, "info must be a dict or None, not list"),
        ({"info": {"score": float("nan")}}, "cannot store nan at info.score"),
        ({"env_index": 0.5}, "env_index must be an int (64-bit) or a str, not float"),
    ],
)
@pytest.mark.parametrize("mode", ["record", "replay"])
def test_an_outcome_the_file_cannot_hold_is_refused(
    tmp_path: Path, outcome: dict[str, Any], says: str, mode: str
) -> None:
    path = tmp_path / "c.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call(_request(), live=_answer)
        if mode == "record":
            with pytest.raises(CassetteError) as raised:
                cas.outcome(**outcome)
        cas.outcome(0, reward=1.0)  # (after a refused one: the cassette goes on)
    if mode == "replay":  # replay writes nothing, and checks alike
        with cassette.open(path, "replay") as cas, pytest.raises(CassetteError) as raised:
            cas.outcome(**outcome)
    assert says in str(raised.value) and "\n" not in str(raised.value)
    assert cassette.open(path, "replay").index.outcomes[0]["reward"] == 1.0


def test_outcome_values_are_written_as_the_format_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call(_request(), live=_answer)
        cas.outcome(0, reward=np.float32(0.5), terminated=np.bool_(True), info={"k": 1})
        cas.outcome("named", reward=3, terminated=False)
    outcomes = cassette.open(path, "replay").index.outcomes
    assert outcomes[0]["reward"] == 0.5 and outcomes[0]["terminated"] is True
    assert outcomes["named"] == {
        "type": "outcome",
        "env_index": "named",
        "reward": 3.0,
        "terminated": False,
        "info": {},
    }
