"""pytest plugin (entry point ``pytest11``): the ``cassette`` fixture and marker and the
``--cassette-*`` options. A test that does not pass aborts its cassette; a cassette's failure
names the command that re-records the test."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .plugin_settings import (
    DEFAULT_DIR,
    DEFAULT_MODE,
    MODES,
    SETTINGS,
    UNUSED_PROPERTY,
    pytest_addoption,
    pytest_configure,
    pytest_report_header,
    shown,
)

if TYPE_CHECKING:
    from ..replay.cassette import Cassette

__all__ = ["DEFAULT_DIR", "DEFAULT_MODE", "MODES", "cassette", "default_path",
           "pytest_addoption", "pytest_configure", "pytest_report_header",
           "pytest_runtest_makereport"]  # fmt: skip

_MARKER_KEYS = ("path", "mode", "match", "ignore")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.,=+@\[\]-]+")


@dataclass
class _TestState:
    cas: Cassette
    source: str
    reports: dict[str, pytest.TestReport] = field(default_factory=dict)


_STATE = pytest.StashKey[_TestState]()


def _safe_name(name: str) -> str:
    safe = _UNSAFE.sub("_", name).strip(". ")
    if safe != name or len(safe) > 120:
        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        safe = f"{safe[:100]}-{digest}"
    return safe


def default_path(item: pytest.Item, directory: Path | str) -> Path | str:
    """``<directory>/<module>/<Class.>...<test>.jsonl``; other characters of an id than
    ``[A-Za-z0-9_.,=+@[]-]`` become ``_`` and an 8-hex hash of the id is appended."""
    classes = [node.name for node in item.listchain() if isinstance(node, pytest.Class)]
    name = ".".join([*classes, item.name])
    return _where(item, directory, f"{item.path.stem}/{_safe_name(name)}.jsonl")


def _marker_options(item: pytest.Item) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for marker in item.iter_markers("cassette"):  # closest first
        unknown = sorted(set(marker.kwargs) - set(_MARKER_KEYS))
        if unknown or len(marker.args) > 1 or (marker.args and "path" in marker.kwargs):
            pytest.fail(
                f"{item.nodeid}: @pytest.mark.cassette takes path (also positional), mode, "
                f"match and ignore; got args={marker.args!r} kwargs={sorted(marker.kwargs)}",
                pytrace=False,
            )
        given = {**dict(zip(["path"], marker.args, strict=False)), **marker.kwargs}
        found = {**given, **found}  # a closer marker's keys win
    return found


def _ignore_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    raise TypeError(f"@pytest.mark.cassette(ignore=...) takes a list of str, not {value!r}")


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """An open :class:`cassette.Cassette` for this test, at
    ``<--cassette-dir>/<module>/<test>.jsonl`` in ``--cassette-mode`` (default replay);
    ``@pytest.mark.cassette(path=, mode=, match=, ignore=)`` overrides (``pytest --markers``)."""
    from ..replay.cassette import Mode
    from ..replay.cassette import open as open_cassette
    from ..replay.modes import PYTEST_FIX, REPLAY_KEYS

    item = request.node
    assert isinstance(item, pytest.Item)
    settings = request.config.stash[SETTINGS]
    options = _marker_options(item)
    where = _where(item, settings.directory, options.get("path"))
    mode, source = settings.mode_for(options.get("mode"))
    cas = open_cassette(
        where,
        mode,
        match=str(options.get("match") or "strict"),
        ignore=_ignore_list(options.get("ignore")),
    )
    if not cas.forced:  # here the flag re-records (a forced mode names its variable)
        cas.fix = PYTEST_FIX
    state = _TestState(cas, source)
    item.stash[_STATE] = state
    with pytest.MonkeyPatch.context() as patch:
        if cas.mode is Mode.REPLAY:  # (a key the SDKs ask for; no call leaves the test)
            for key, value in REPLAY_KEYS.items():
                patch.setenv(key, os.environ.get(key) or value)
        try:
            yield cas
        finally:
            _finish(item, state)


def _where(item: pytest.Item, directory: Path | str, raw: Any) -> Path | str:
    """The marker's ``path`` (``raw``) under ``directory`` (a URL or absolute path as it is)."""
    if raw is None:
        return default_path(item, directory)
    from ..storage.remote import is_url

    text: str = os.fspath(raw)
    if is_url(text):
        return text
    if isinstance(directory, str):
        return f"{directory}/{text}"  # under the URL; a slash stays
    where = directory / Path(text).expanduser()  # absolute stays
    if text.endswith(("/", os.sep)):  # a shard directory: a str keeps the slash
        return f"{where}{os.sep}"
    return where


def _finish(item: pytest.Item, state: _TestState) -> None:
    from ..replay.cassette import Mode

    cas = state.cas
    passed = [r.passed for r in state.reports.values() if r.when in ("setup", "call")]
    if passed != [True, True]:
        if not cas.closed:  # (the failure may have aborted it already)
            cas.abort(None)
        return
    if cas.mode in (Mode.REPLAY, Mode.APPEND):
        _note_unused(item, cas)
    cas.close()


def _note_unused(item: pytest.Item, cas: Cassette) -> None:
    """Put the recordings ``cas`` never played (the first keys) on the test's report."""
    unused = cas.unused()
    if unused:
        keys = [f"env_index={e!r} channel={c!r} step={s}" for e, c, s in unused[:5]]
        path, total = shown(cas.path, item.config), len(cas.index.entries)
        info = {"path": path, "count": len(unused), "total": total, "keys": keys}
        item.user_properties.append((UNUSED_PROPERTY, info))


def _cassette_error(exc: BaseException | None) -> bool:
    from ..errors import CassetteError

    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, CassetteError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    state = item.stash.get(_STATE, None)
    failure = call.excinfo.value if call.excinfo is not None else None
    if state is None:
        return (yield)
    if failure is not None and not state.cas.closed:  # (a teardown's report: it is closed)
        # abort before the report is made, so the note naming the side file is in it
        state.cas.abort(None if isinstance(failure, pytest.skip.Exception) else failure)
    report = yield
    state.reports[report.when] = report
    if report.failed and _cassette_error(failure):
        report.sections.append(("cassette", _rerecord_note(item, state)))
    return report


def _rerecord_note(item: pytest.Item, state: _TestState) -> str:
    """Where the cassette is, its mode and where that came from, and how to re-record."""
    cas = state.cas
    again = shlex.join(["pytest", "--cassette-mode=record", item.nodeid])
    if cas.forced:  # the variable beats the flag: name it
        again = "CASSETTE_FORCE_MODE=record " + shlex.join(["pytest", item.nodeid])
    where = f"cassette {shown(cas.path, item.config)} (mode={cas.mode.value}, "
    return f"{where}from {state.source})\nre-record this test with: {again}"
