"""The message delta encoding (property tests)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cassette.format.delta import (
    LIT_KEY,
    REF_KEY,
    MessageBase,
    decode_messages,
    encode_messages,
)
from tests.helpers.strategies import json_values

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


@settings(max_examples=300)
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
