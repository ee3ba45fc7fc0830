"""The cassettes shipped as package data: found by name, valid, a clear error otherwise."""

from __future__ import annotations

import pytest

import cassette
from cassette.dataset.validate import validate
from cassette.testing import bundled


@pytest.mark.parametrize("name", ["demo", "tau2_mock"])
def test_each_bundled_cassette_is_inside_the_package_and_valid(name: str) -> None:
    path = bundled(name)
    assert path.parent.parent.name == "testing" and path.name == f"{name}.jsonl"
    report = validate(path)
    assert report.ok, report.faults


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(cassette.CassetteError, match=r"pick one of demo, tau2_mock"):
        bundled("nope")
