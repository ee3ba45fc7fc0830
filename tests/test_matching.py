"""Ignore rules, the first differing path, and shortened values in a mismatch."""

from __future__ import annotations

import pytest

from cassette.matching import Difference, Matcher, first_difference


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
