"""The canonical form (property tests), the first differing path, shortened values in
a mismatch, and NaN refused (the matcher's chain and ignore rules: test_matching.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cassette
from cassette.format.canonical import canonical_bytes
from cassette.format.codec import messages_finite
from cassette.format.difference import Difference, first_difference
from tests.helpers.strategies import json_values, naive_canonical

keys = st.one_of(st.text(max_size=8), st.sampled_from(["messages", "input"]))


@settings(max_examples=400)
@given(st.dictionaries(keys, json_values, max_size=6))
def test_fast_canonical_equals_the_naive_walk(request: dict[str, Any]) -> None:
    assert canonical_bytes(request) == naive_canonical(request)
    assert canonical_bytes(request) == canonical_bytes(request)  # and again, from the cache


def test_parameters_are_normalised_the_conversation_is_kept_as_written() -> None:
    a = {"temperature": 1.0, "tools": [{"minimum": 0.0}], "messages": [{"n": 1.0}]}
    b = {"temperature": 1, "tools": [{"minimum": 0}], "messages": [{"n": 1.0}]}
    c = {"temperature": 1, "tools": [{"minimum": 0}], "messages": [{"n": 1}]}
    assert canonical_bytes(a) == canonical_bytes(b) != canonical_bytes(c)


def test_canonical_ignores_key_order_and_integral_float_spelling() -> None:
    a = {"model": "m", "temperature": 1.0, "messages": [{"role": "user", "content": "1.0"}]}
    b = {"messages": [{"content": "1.0", "role": "user"}], "temperature": 1, "model": "m"}
    assert canonical_bytes(a) == canonical_bytes(b)
    assert canonical_bytes({"t": 0.5}) != canonical_bytes({"t": 0.25})
    assert canonical_bytes({"x": "1"}) != canonical_bytes({"x": 1})
    assert canonical_bytes({"x": True}) != canonical_bytes({"x": 1})


def test_first_difference_names_the_path() -> None:
    a = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "1"}],
    }
    b = {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}, {"role": "tool", "content": "2"}],
    }
    d = first_difference(a, b)
    assert d is not None and d.where == "messages[1].content" and (d.a, d.b) == ("1", "2")
    d = first_difference({"messages": [1]}, {"messages": [1, 2]})
    assert d is not None and d.where == "messages[1]" and d.a is Difference.MISSING
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) is None
    d = first_difference({"odd key": 1}, {"odd key": 2})
    assert d is not None and d.where == "['odd key']"


def test_describe_shortens_long_values_around_the_change() -> None:
    a = "lorem ipsum " * 40 + "PARIS" + " tail" * 40
    b = "lorem ipsum " * 40 + "LONDON" + " tail" * 40
    text = Difference(("messages", 3, "content"), a, b).describe()
    assert "messages[3].content" in text
    assert "PARIS" in text and "LONDON" in text
    assert all(len(line) < 110 for line in text.splitlines())


NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("messages", "finite"),
    [
        ([{"role": "user", "content": 'null "content":null'}], True),  # nulls in text
        ([{"role": "assistant", "content": None, "tool_calls": [{"id": "a"}]}], True),
        ([{"role": "assistant", "content": None, "x": None}], True),  # walked: still finite
        ([{"role": "assistant", "content": NAN}], False),
        ([{"role": "assistant", "content": None, "tool_calls": [{"content": NAN}]}], False),
        ([{"role": "assistant"}, {"content": INF}], False),
        ([{"role": "tool", "score": -INF}], False),
        ([[NAN]], False),
    ],
)
def test_messages_finite_looks_at_the_new_messages(messages: list, finite: bool) -> None:
    """A NaN or an infinity anywhere in the messages is found; a None content is not one."""
    assert messages_finite(messages, 0) is finite
    # as the new messages of a longer conversation: only they are looked at
    longer = [{"role": "user", "content": None}, *messages]
    assert messages_finite(longer, 1) is finite
    assert messages_finite([{"score": NAN}, *messages], 1) is finite


@pytest.mark.parametrize(
    "nan_at", [("content",), ("tool_calls", 0, "content"), ("tool_calls", 0, "score")]
)
def test_replay_refuses_a_nan_where_the_recording_held_none(
    tmp_path: Path, nan_at: tuple[str | int, ...]
) -> None:
    """NaN hashes like None (both are written null): a replayed request with a NaN where
    the recorded one held None is refused, in a message a later step adds."""

    def answer(value: Any) -> dict[str, Any]:
        call = {"id": "c", "content": None, "score": None}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        node: Any = message
        for part in nan_at[:-1]:
            node = node[part]
        node[nan_at[-1]] = value
        return message

    first = [{"role": "user", "content": "hi"}]
    path = tmp_path / "run.jsonl"
    with cassette.open(path, "record") as cas:
        cas.call({"messages": first}, live=lambda: {"ok": 1})
        cas.call({"messages": [*first, answer(None)]}, live=lambda: {"ok": 2})
    with cassette.open(path, "replay") as cas:
        assert cas.call({"messages": first}, live=dict) == {"ok": 1}
        with pytest.raises(cassette.CassetteError, match="nan"):
            cas.call({"messages": [*first, answer(NAN)]}, live=dict)
    with cassette.open(path, "replay") as cas:  # and None is served
        cas.call({"messages": first}, live=dict)
        assert cas.call({"messages": [*first, answer(None)]}, live=dict) == {"ok": 2}
