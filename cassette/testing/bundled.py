"""Cassettes shipped with the package (``cassette demo --bundled``, ``cassette tau2 --bundled``),
made by ``fixtures/make_demo.py`` and ``fixtures/make_tau2_mock.py``."""

from __future__ import annotations

from pathlib import Path

from ..errors import CassetteError

__all__ = ["BUNDLED", "DATA_DIR", "bundled"]

DATA_DIR = Path(__file__).resolve().parent / "data"
BUNDLED = ("demo", "tau2_mock")


def bundled(name: str) -> Path:
    """The path of the bundled cassette ``name`` (one of :data:`BUNDLED`)."""
    if name not in BUNDLED:
        raise CassetteError(f"no bundled cassette {name!r}; pick one of {', '.join(BUNDLED)}")
    path = DATA_DIR / f"{name}.jsonl"
    if not path.is_file():
        raise CassetteError(f"{path} is missing from the installed package; reinstall it")
    return path
