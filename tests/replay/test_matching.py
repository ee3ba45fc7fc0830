"""The matcher: the chained hash of an episode (property test against the plain
hash) and the ignore rules."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import cassette
from cassette.format.canonical import canonical_parts, sha256_of
from cassette.replay.matching import Matcher
from tests.helpers.strategies import naive_canonical

conversations = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "tool"]), "content": st.text(max_size=4)}
    ),
    max_size=4,
)
kinds = st.sampled_from(["extend", "same", "rewrite", "last", "params", "input"])
steps = st.tuples(kinds, conversations)


def said(*texts: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": t} for t in texts]


@settings(max_examples=300)
@given(st.lists(steps, min_size=1, max_size=10))
@example([("extend", said("a", "b")), ("last", said("c")), ("last", said("d"))])
@example([("extend", said("a", "b")), ("extend", said("c")), ("last", said("d")), ("same", [])])
def test_chained_hashing_gives_the_plain_hash_whatever_the_next_request(
    steps: list[tuple[str, list[Any]]],
) -> None:
    """A matcher hashes only what a request adds to the previous one of its key (or the
    last message it replaces), going on from that one's state; the hash must be that of
    the whole canonical form, whatever the sequence (and a chain is never used twice)."""
    request: dict[str, Any] = {"model": "m", "messages": []}
    matcher = Matcher()
    for kind, extra in steps:
        if kind == "extend":
            request = {**request, "messages": [*request.get("messages", []), *extra]}
        elif kind == "rewrite":
            request = {**request, "messages": extra}
        elif kind == "last":  # the last message replaced (the same system prompt, a new question)
            request = {**request, "messages": [*request.get("messages", [])[:-1], *extra[:1]]}
        elif kind == "params":
            request = {**request, "temperature": float(len(extra)), "a": extra}
        elif kind == "input":  # the conversation moves to another key
            request = {"model": "m", "input": extra}
        want = hashlib.sha256(naive_canonical(request)).hexdigest()
        assert sha256_of(canonical_parts(request)) == want
        assert matcher.digest_parts(request, (0, "llm"))[0] == want
        assert matcher.digest(request, (1, "llm")) == want  # (another key: its own chain)


def test_default_ignore_drops_transport_keys_from_the_hash() -> None:
    m = Matcher()
    a = {"model": "m", "messages": [], "api_key": "k1", "timeout": 3, "extra_headers": {"x": 1}}
    b = {"model": "m", "messages": [], "api_key": "k2", "base_url": "http://elsewhere"}
    assert m.digest(a) == m.digest(b)
    assert Matcher(defaults=False).digest(a) != Matcher(defaults=False).digest(b)


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        ("temperature", {"temperature": 1, "x": 1}, {"x": 1}),
        ("metadata.trace", {"metadata": {"trace": 1, "k": 2}}, {"metadata": {"k": 2}}),
        (
            "messages[*].name",
            {"messages": [{"role": "u", "name": "a"}, {"role": "v"}]},
            {"messages": [{"role": "u"}, {"role": "v"}]},
        ),
        ("messages[1]", {"messages": [1, 2, 3]}, {"messages": [1, 3]}),
        ("**.ts", {"a": {"ts": 1, "b": [{"ts": 2, "c": 3}]}, "ts": 0}, {"a": {"b": [{"c": 3}]}}),
        (
            "tools[*].function.description",
            {"tools": [{"function": {"description": "d", "name": "n"}}]},
            {"tools": [{"function": {"name": "n"}}]},
        ),
    ],
)
def test_ignore_paths(path: str, before: dict, after: dict) -> None:
    m = Matcher([path], defaults=False)
    assert m.normalise(before) == after
    assert m.digest(before) == Matcher(defaults=False).digest(after)


def test_ignore_does_not_mutate_the_request() -> None:
    req = {"messages": [{"role": "u", "name": "a"}]}
    Matcher(["messages[*].name"]).normalise(req)
    assert req == {"messages": [{"role": "u", "name": "a"}]}


def test_bad_ignore_path_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="must end in a key"):
        Matcher(["a.**"])


def test_one_ignore_rule_may_be_given_as_a_str(tmp_path: Path) -> None:
    """``ignore="temperature"`` is one rule, not eleven one-letter ones."""
    path = tmp_path / "c.jsonl"
    answer = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "a"}}]}
    asked = {"model": "m", "temperature": 0.1, "messages": [{"role": "user", "content": "q"}]}
    assert Matcher("temperature").ignore == ("temperature",)
    with cassette.open(path, "record", ignore="temperature") as cas:
        cas.call(asked, live=lambda: answer)
    assert cas.meta["ignore"] == ["temperature"]
    with cassette.open(path, "replay", ignore="temperature") as cas:
        assert cas.call({**asked, "temperature": 0.9}, live=lambda: {}) == answer
