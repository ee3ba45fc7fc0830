"""The public API is exactly what cassette.__all__ lists."""

from __future__ import annotations

import types

import cassette


def test_all_names_exist_and_nothing_public_is_missing() -> None:
    for name in cassette.__all__:
        assert hasattr(cassette, name), name
    public = {
        name
        for name, value in vars(cassette).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    assert public == set(cassette.__all__) - {"__version__"}


def test_contract_names_from_design() -> None:
    for name in (
        "open",
        "fork",
        "Cassette",
        "Mode",
        "episode",
        "CassetteError",
        "CassetteMiss",
        "CassetteMismatch",
        "CassetteFormatError",
        "CassetteModeError",
        "RecordedError",
        "CassetteWarning",
    ):
        assert name in cassette.__all__
    for sub in ("CassetteMiss", "CassetteMismatch", "CassetteFormatError", "CassetteModeError"):
        assert issubclass(getattr(cassette, sub), cassette.CassetteError)
    assert issubclass(cassette.RecordedError, cassette.CassetteError)
    assert issubclass(cassette.CassetteWarning, UserWarning)
    assert [m.value for m in cassette.Mode] == ["replay", "record", "auto", "append", "passthrough"]
    assert isinstance(cassette.Mode.REPLAY, str)
    assert callable(cassette.fork) and callable(cassette.open)
