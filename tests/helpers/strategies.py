"""What the property tests share: JSON values as a request holds them (hypothesis
strategies), and the plain reference walk the canonical form is compared with."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import strategies as st

from cassette.format.canonical import normalise_numbers

__all__ = ["json_values", "naive_canonical", "scalars"]

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
    """The canonical form written plainly: parameters with their numbers normalised, the
    conversation (``messages``/``input`` lists) as written, keys sorted."""
    conversation = {k: v for k, v in request.items() if k in ("messages", "input")}
    conversation = {k: v for k, v in conversation.items() if isinstance(v, list)}
    params = {k: normalise_numbers(v) for k, v in request.items() if k not in conversation}
    return orjson.dumps({**params, **conversation}, option=orjson.OPT_SORT_KEYS)
