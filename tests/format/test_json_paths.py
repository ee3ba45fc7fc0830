"""JSON paths (``messages[*].name``, ``metadata.trace_id``, ``**.timestamp``): parsing, and
:class:`Paths`, the one ignore-path implementation of replay matching and ``cassette diff``
(their rules are tested through them in tests/replay/test_matching.py and tests/diff)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cassette.format.paths import ANY, DEEP, Paths, parse_path

KEYS = ("a", "b", "c")
values = st.recursive(
    st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["x", "y"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)
    ),
    max_leaves=12,
)
step = st.sampled_from([".a", ".b", ".c", "[0]", "[1]", "[*]", ".*", ".**"])
last = st.sampled_from([".a", ".b", "[0]", "[1]", "[*]"])
roots = st.fixed_dictionaries({"x": st.lists(values, min_size=1, max_size=3) | values})
paths = st.builds(lambda steps, end: "x" + "".join(steps) + end, st.lists(step, max_size=3), last)
_GONE = object()


def naive(node: Any, tokens: tuple[Any, ...]) -> Any:
    """What one path leaves of ``node``, by deep copy and deletion (the test's oracle)."""
    if not tokens:
        return _GONE
    head, rest = tokens[0], tokens[1:]
    if head is DEEP:
        node = naive(node, rest)  # zero levels, then every level below
        if isinstance(node, dict):
            return {k: naive(v, tokens) for k, v in node.items()}
        return [naive(v, tokens) for v in node] if isinstance(node, list) else node
    if isinstance(node, dict):
        keys = list(node) if head is ANY else [head] if head in node else []
        out = {k: naive(v, rest) if k in keys else copy.deepcopy(v) for k, v in node.items()}
        return {k: v for k, v in out.items() if v is not _GONE}
    if isinstance(node, list):
        picked = range(len(node)) if head is ANY else [head] if isinstance(head, int) else []
        out_list = [naive(v, rest) if i in picked else v for i, v in enumerate(node)]
        return [v for v in out_list if v is not _GONE]
    return node


def edits(node: Any) -> list[Any]:
    """``node`` changed in one place: a leaf replaced, a key or an item removed."""
    if isinstance(node, dict):
        out = [{k: v for k, v in node.items() if k != key} for key in node]
        return out + [{**node, k: e} for k, v in node.items() for e in edits(v)]
    if isinstance(node, list):
        out = [node[:i] + node[i + 1 :] for i in range(len(node))]
        return out + [[*node[:i], e, *node[i + 1 :]] for i, v in enumerate(node) for e in edits(v)]
    return [7, "z"]


def test_parse_path() -> None:
    assert parse_path("messages[*].name") == ("messages", ANY, "name")
    assert parse_path("metadata.trace_id") == ("metadata", "trace_id")
    assert parse_path("**.timestamp") == (DEEP, "timestamp")
    assert parse_path("tools[2].function.*") == ("tools", 2, "function", ANY)
    with pytest.raises(ValueError, match="cannot parse ignore path 'a\\[x'"):
        parse_path("a[x")
    with pytest.raises(ValueError, match="must end in a key or index"):
        parse_path("a.**")
    with pytest.raises(ValueError, match="must end in a key or index"):
        parse_path("")


@given(roots, paths)
def test_one_path_drops_what_it_selects_and_leaves_the_value_alone(
    value: dict[str, Any], path: str
) -> None:
    before = copy.deepcopy(value)
    assert Paths([path]).apply(value) == naive(value, parse_path(path))
    assert value == before


@settings(max_examples=300)
@given(roots, st.lists(paths, max_size=3), st.data())
def test_same_is_equality_after_apply(
    a: dict[str, Any], rules: list[str], data: st.DataObject
) -> None:
    b = data.draw(st.sampled_from(edits(a)))  # a differs from b in one place
    tree = Paths(rules)
    if data.draw(st.booleans()):  # an act that rewrites a value (the diff parses arguments)
        tree.add(("x", ANY), lambda v: v * 2 if isinstance(v, int) else v)
    assert tree.same(a, b) == (tree.apply(a) == tree.apply(b))
    assert tree.same(b, a) == tree.same(a, b)
    assert tree.same(a, copy.deepcopy(a))


@pytest.mark.parametrize(
    ("rules", "a", "b", "same"),
    [
        (["x[*].a"], {"x": [{"a": 1, "b": 1}]}, {"x": [{"a": 2, "b": 1}]}, True),
        (["x[*].a"], {"x": [{"a": 1, "b": 1}]}, {"x": [{"a": 1, "b": 2}]}, False),
        (["x.*.a"], {"x": {"k": {"a": 1}}}, {"x": {"k": {"a": 2}}}, True),
        (["x[0]"], {"x": [1, 2]}, {"x": [3, 2]}, True),
        (["x[0]"], {"x": [1, 2]}, {"x": [2]}, False),
        (["x[0]"], {"x": [1, 2]}, {"x": [1, 2, 2]}, False),
        (["x[1]", "x[*].a"], {"x": [{"a": 1}, 5]}, {"x": [{"a": 2}, 6]}, True),
        (["x.a", "y"], {"x": {"a": 1}, "y": 1}, {"x": {"a": 2}}, True),
        (["x.a"], {"x": {"a": 1}}, {"x": {}}, True),
        (["x.a"], {"x": {"a": 1}}, {"x": {"b": 1}}, False),
        (["**.t"], {"x": [{"t": 1, "u": [{"t": 2}]}]}, {"x": [{"t": 3, "u": [{}]}]}, True),
        (["**.t"], {"x": [{"t": 1, "u": [{"t": 2}]}]}, {"x": [{"t": 3, "u": []}]}, False),
    ],
)
def test_same(rules: list[str], a: Any, b: Any, same: bool) -> None:
    tree = Paths(rules)
    assert tree.same(a, b) is same
    assert (tree.apply(a) == tree.apply(b)) is same


def test_index_paths_name_the_items_before_any_is_dropped() -> None:
    assert Paths(["x[0]", "x[1]"]).apply({"x": [1, 2, 3]}) == {"x": [3]}
    assert Paths(["x[*].a", "x[1]"]).apply({"x": [{"a": 1, "b": 2}, {"a": 3}]}) == {"x": [{"b": 2}]}


def test_what_is_not_touched_is_shared_not_copied() -> None:
    kept = {"role": "user", "content": "hi"}
    value = {"messages": [kept], "metadata": {"trace_id": "t", "k": 1}, "api_key": "s"}
    out = Paths(["metadata.trace_id", "api_key"]).apply(value)
    assert out == {"messages": [kept], "metadata": {"k": 1}}
    assert out["messages"] is value["messages"]
    assert Paths(["metadata.other", "nope[*].x"]).apply(value) is value


def test_an_act_applies_before_the_paths_below_it() -> None:
    tree = Paths(["args.city"])
    tree.add(("args",), lambda v: {"city": v.upper(), "n": 1} if isinstance(v, str) else v)
    assert tree.apply({"args": "paris", "k": 0}) == {"args": {"n": 1}, "k": 0}
    assert tree.same({"args": "paris"}, {"args": "lyon"})
    assert not tree.same({"args": "paris"}, {"args": 3})
