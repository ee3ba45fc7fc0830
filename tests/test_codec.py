"""Canonical hashing and the message delta encoding (property tests)."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cassette.codec import (
    LIT_KEY,
    REF_KEY,
    MessageBase,
    canonical_bytes,
    canonical_parts,
    decode_messages,
    encode_messages,
    normalise_numbers,
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


def naive_canonical(request: dict[str, Any]) -> bytes:
    conversation = {k: v for k, v in request.items() if k in ("messages", "input")}
    conversation = {k: v for k, v in conversation.items() if isinstance(v, list)}
    params = {k: normalise_numbers(v) for k, v in request.items() if k not in conversation}
    return orjson.dumps({**params, **conversation}, option=orjson.OPT_SORT_KEYS)


keys = st.one_of(st.text(max_size=8), st.sampled_from(["messages", "input"]))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(keys, json_values, max_size=6))
def test_fast_canonical_equals_the_naive_walk(request: dict[str, Any]) -> None:
    assert canonical_bytes(request) == naive_canonical(request)
    assert canonical_bytes(request) == canonical_bytes(request)  # and again, from the cache


conversations = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "tool"]), "content": st.text(max_size=4)}
    ),
    max_size=4,
)
steps = st.tuples(st.sampled_from(["extend", "same", "rewrite", "params", "input"]), conversations)


@settings(max_examples=300, deadline=None)
@given(st.lists(steps, min_size=1, max_size=10))
def test_chained_hashing_gives_the_plain_hash_whatever_the_next_request(
    steps: list[tuple[str, list[Any]]],
) -> None:
    """sha256_from hashes only what a request adds to the previous one of its key; the
    hash must be that of the whole canonical form, whatever the sequence."""
    request: dict[str, Any] = {"model": "m", "messages": []}
    chain = None
    for kind, extra in steps:
        if kind == "extend":
            request = {**request, "messages": [*request.get("messages", []), *extra]}
        elif kind == "rewrite":
            request = {**request, "messages": extra}
        elif kind == "params":
            request = {**request, "temperature": float(len(extra)), "a": extra}
        elif kind == "input":  # the conversation moves to another key
            request = {"model": "m", "input": extra}
        parts = canonical_parts(request)
        sha, chain = parts.sha256_from(chain)
        assert sha == parts.sha256() == hashlib.sha256(naive_canonical(request)).hexdigest()


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


messages = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=5)}
        ),
        st.dictionaries(
            st.sampled_from([REF_KEY, LIT_KEY, "omit", "role"]), json_values, max_size=2
        ),
    ),
    max_size=6,
)


def _fail(why: str) -> Exception:
    return AssertionError(why)


@settings(max_examples=300, deadline=None)
@given(
    base=messages,
    extra=messages,
    answer=st.text(max_size=5),
    reuse=st.booleans(),
    cut=st.integers(0, 6),
)
def test_delta_round_trip(
    base: list[Any], extra: list[Any], answer: str, reuse: bool, cut: int
) -> None:
    response = {"choices": [{"message": {"role": "assistant", "content": answer, "refusal": None}}]}
    new = base[: min(cut, len(base))]
    if reuse:
        new = [*new, {"role": "assistant", "content": answer}]
    new = new + extra
    stored, keep = encode_messages(new, MessageBase.of(base, response))
    assert decode_messages(stored, keep, base, response, _fail) == new


def test_delta_stores_only_new_messages_and_references_the_answer() -> None:
    base = [{"role": "user", "content": "a" * 100}]
    answer = {"role": "assistant", "content": "b" * 100, "refusal": None, "tool_calls": None}
    response = {"choices": [{"message": answer}]}
    new = [*base, {"role": "assistant", "content": "b" * 100}, {"role": "user", "content": "c"}]
    stored, keep = encode_messages(new, MessageBase.of(base, response))
    assert keep == 1
    assert stored[0] == {REF_KEY: ["choices", 0, "message"], "omit": ["refusal", "tool_calls"]}
    assert stored[1] == {"role": "user", "content": "c"}
    # a message that really differs from the answer is stored in full
    other = [*base, {"role": "assistant", "content": "edited"}]
    stored, _ = encode_messages(other, MessageBase.of(base, response))
    assert stored == [{"role": "assistant", "content": "edited"}]


def test_decode_reports_a_broken_reference() -> None:
    with pytest.raises(AssertionError, match="not found in the base response"):
        decode_messages([{REF_KEY: ["choices", 3, "message"]}], 0, [], {"choices": []}, _fail)
    with pytest.raises(AssertionError, match="keeps 2 messages"):
        decode_messages([], 2, [{"role": "user"}], None, _fail)
