"""What JSON cannot hold exactly is refused before the live call (never hashed or written
as something else): NaN and infinities, bytes that are not UTF-8, sets, ints beyond 64
bits, dict keys that are not strings, nesting deeper than 254 levels. And a mismatch of
``True`` against ``1`` is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import cassette

Json = dict[str, Any]


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


NOT_JSON = {
    "nan": ({"model": "m", "temperature": float("nan")}, "nan at request.temperature"),
    "inf": ({"model": "m", "messages": [{"role": "user", "x": float("inf")}]}, "messages[0].x"),
    "-inf in a nested param": ({"tools": [{"w": -float("inf")}]}, "request.tools[0].w"),
    "bytes not utf-8": ({"model": "m", "data": b"\xff"}, "bytes that are not UTF-8"),
    "set": ({"model": "m", "stop": {"a", "b"}}, "a set"),
    "int beyond 64 bits": ({"model": "m", "seed": 2**64}, "an int beyond 64 bits"),
    "int dict key": ({"model": "m", "logit_bias": {50256: -100}}, "a dict key that is not"),
    "nested deeper than 254": ({"model": "m", "x": _deep(300)}, "nested deeper than 254"),
    "in an ignored key": ({"model": "m", "headers": {1: "x"}}, "a dict key that is not"),
}


@pytest.mark.parametrize("mode", ["record", "append"])
@pytest.mark.parametrize("name", list(NOT_JSON))
def test_refused_before_the_live_call(tmp_path: Path, name: str, mode: str) -> None:
    request, why = NOT_JSON[name]
    calls: list[int] = []

    def live() -> Json:
        calls.append(1)
        return {"ok": 1}

    path = tmp_path / "run.jsonl"
    with cassette.open(path, mode) as cas:
        with pytest.raises(cassette.CassetteError, match="nothing was sent") as info:
            cas.call(request, live=live)
        assert why in str(info.value)
        assert calls == []
        # the step was not used up: the next (good) call is step 0
        cas.call({"model": "m"}, live=live)
    with cassette.open(path, "replay") as cas:
        assert cas.call({"model": "m"}, live=live, step=0) == {"ok": 1}
    assert calls == [1]


def test_values_that_json_would_merge_no_longer_match(tmp_path: Path) -> None:
    """On main NaN hashed like null, b'\\xff' like b'\\xfe', a set like its sorted list:
    replay served one for the other. Now each live request with them is refused."""
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"t": None, "s": ["a", "b"]}, live=lambda: {"ok": 1})
    with cassette.open(path, "replay") as cas:
        with pytest.raises(cassette.CassetteError, match="nan"):
            cas.call({"t": float("nan"), "s": ["a", "b"]}, live=lambda: {}, step=0)
        with pytest.raises(cassette.CassetteError, match="a set"):
            cas.call({"t": None, "s": {"a", "b"}}, live=lambda: {}, step=0)
        assert cas.call({"t": None, "s": ["a", "b"]}, live=lambda: {}, step=0) == {"ok": 1}


def test_utf8_bytes_are_stored_as_their_text(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"data": "héllo".encode()}, live=lambda: {"ok": 1})
    with cassette.open(path, "replay") as cas:
        assert cas.call({"data": "héllo".encode()}, live=lambda: {}) == {"ok": 1}


def test_a_nan_in_the_conversation_is_found_in_a_later_message(tmp_path: Path) -> None:
    """The conversation is checked where it grows: a NaN in a message a later step adds."""
    path = tmp_path / "run.jsonl"
    messages: list[Json] = [{"role": "user", "content": None}]
    with cassette.open(path, "record") as cas:
        cas.call({"messages": list(messages)}, live=lambda: {"ok": 1})
        messages.append({"role": "tool", "content": None, "score": float("nan")})
        with pytest.raises(cassette.CassetteError, match=r"messages\[1\]\.score"):
            cas.call({"messages": list(messages)}, live=lambda: {"ok": 2})


def test_a_nan_in_a_replaced_last_message_is_found(tmp_path: Path) -> None:
    """The same start, a new last message (hashed on from the state before it): the new
    message is still checked."""
    system = {"role": "system", "content": "be brief"}
    with cassette.open(tmp_path / "run.jsonl", "record") as cas:
        cas.call({"messages": [system, {"role": "user", "content": "a"}]}, live=lambda: {})
        replaced = [system, {"role": "user", "content": None, "score": float("nan")}]
        with pytest.raises(cassette.CassetteError, match=r"messages\[1\]\.score"):
            cas.call({"messages": replaced}, live=lambda: {})


def test_true_against_1_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"model": "m", "messages": [{"role": "user", "flag": 1}]}, live=lambda: {})
    with cassette.open(path, "replay") as cas, pytest.raises(cassette.CassetteMismatch) as info:
        cas.call({"model": "m", "messages": [{"role": "user", "flag": True}]}, live=dict)
    message = str(info.value)
    assert "no field differs" not in message
    assert "first difference at messages[0].flag" in message
    assert "1 (int)" in message and "True (bool)" in message
    assert info.value.field == "messages[0].flag"
