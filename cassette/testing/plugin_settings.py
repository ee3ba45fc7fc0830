"""The pytest plugin's ``--cassette-*`` options and ini twins (read once into :class:`Settings`),
its report header, and the summary of recordings never played (:class:`UnusedSummary`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["DEFAULT_DIR", "DEFAULT_MODE", "MODES", "SETTINGS", "UNUSED_PROPERTY", "Settings",
           "UnusedSummary", "pytest_addoption", "pytest_configure", "pytest_report_header",
           "shown"]  # fmt: skip

MODES = ("replay", "record", "auto", "append", "passthrough")  # cassette.Mode, kept lazy
DEFAULT_MODE = "replay"
DEFAULT_DIR = "tests/cassettes"
_MARKER_HELP = (
    "cassette(path=None, mode=None, match='strict', ignore=()): configure the `cassette` "
    "fixture: its file (relative to --cassette-dir, or absolute), its mode (below "
    "--cassette-mode and $CASSETTE_MODE, above ini cassette_mode), request matching "
    "('strict' or 'key') and request fields left out of matching."
)


@dataclass
class Settings:
    # (mode, where from): $CASSETTE_FORCE_MODE, --cassette-mode or $CASSETTE_MODE
    override: tuple[str, str] | None
    fallback: tuple[str, str]  # ini cassette_mode, else the default
    directory: Path | str  # a str: an fsspec URL

    def mode_for(self, marked: object) -> tuple[str, str]:
        if self.override is not None:
            return self.override
        if marked is not None:
            return str(getattr(marked, "value", marked)), "@pytest.mark.cassette(mode=...)"
        return self.fallback


SETTINGS = pytest.StashKey[Settings]()


def shown(path: Path | str, config: pytest.Config) -> str:
    """``path`` relative to rootdir when it is under it (a URL as it is)."""
    if isinstance(path, str):
        return path
    try:
        return str(path.relative_to(config.rootpath))
    except ValueError:
        return str(path)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("cassette", "rollout-cassette: record and replay LLM calls")
    group.addoption(
        "--cassette-mode",
        choices=MODES,
        help="mode of every `cassette` fixture: replay (default; a call with no recording "
        "fails the test, nothing live is called), record (call live, rewrite the cassette "
        "when the test passes), auto (replay if the file exists, else record), append "
        "(replay what is recorded, record the rest), passthrough (call live, write nothing). "
        "Precedence: this option > $CASSETTE_MODE > @pytest.mark.cassette(mode=...) > "
        "ini cassette_mode > replay.",
    )
    group.addoption(
        "--cassette-dir",
        metavar="DIR",
        help=f"directory of the default cassettes <DIR>/<module>/<test>.jsonl and of marker "
        f"paths (default: ini cassette_dir, else {DEFAULT_DIR} under rootdir).",
    )
    group.addoption(
        "--cassette-fail-unused",
        action="store_true",
        help="fail the run if a passed test left recorded interactions of its cassette unplayed.",
    )
    parser.addini("cassette_mode", "default mode of the `cassette` fixture (replay)", default="")
    parser.addini("cassette_dir", f"cassette directory, relative to rootdir ({DEFAULT_DIR})")
    parser.addini("cassette_fail_unused", "as --cassette-fail-unused", type="bool", default=False)


def _checked(value: str, where: str) -> str:
    mode = value.strip().lower()
    if mode not in MODES:
        raise pytest.UsageError(
            f"{where}: unknown cassette mode {value!r}; use one of {', '.join(MODES)}"
        )
    return mode


def _override(config: pytest.Config) -> tuple[str, str] | None:
    """The mode that beats the marker's, and where it came from, if one is given."""
    forced = os.environ.get("CASSETTE_FORCE_MODE", "").strip()
    if forced:
        return _checked(forced, "$CASSETTE_FORCE_MODE"), "$CASSETTE_FORCE_MODE"
    option = config.getoption("cassette_mode")
    if option:
        return str(option), "--cassette-mode"
    env = os.environ.get("CASSETTE_MODE", "").strip()
    return (_checked(env, "$CASSETTE_MODE"), "$CASSETTE_MODE") if env else None


def _directory(config: pytest.Config) -> Path | str:
    from ..storage.remote import is_url

    opt_dir = config.getoption("cassette_dir")
    given = opt_dir or str(config.getini("cassette_dir") or "").strip()
    if is_url(given):  # s3://bucket/cassettes, memory://..., gs://...
        return str(given).rstrip("/")
    base = config.invocation_params.dir if opt_dir else config.rootpath  # the option: from cwd
    return base / Path(given or DEFAULT_DIR).expanduser()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    override = _override(config)
    ini_mode = str(config.getini("cassette_mode") or "").strip()
    fallback = (_checked(ini_mode, "ini cassette_mode"), "ini") if ini_mode else None
    fail_unused = config.getoption("cassette_fail_unused") or config.getini("cassette_fail_unused")
    config.stash[SETTINGS] = Settings(
        override, fallback or (DEFAULT_MODE, "default"), _directory(config)
    )
    config.pluginmanager.register(UnusedSummary(bool(fail_unused), config), "cassette-summary")


def pytest_report_header(config: pytest.Config) -> str | None:
    settings = config.stash.get(SETTINGS, None)
    if settings is None:
        return None
    mode, source = settings.override or settings.fallback
    if source == "default" and config.get_verbosity() <= 0:
        return None
    return f"cassette: mode={mode} (from {source}), dir={shown(settings.directory, config)}"


UNUSED_PROPERTY = "cassette_unused"


class UnusedSummary:
    """Per-config hooks: gather the unused recordings, report them, set the exit status."""

    def __init__(self, fail_unused: bool, config: pytest.Config) -> None:
        # an xdist worker never fails the run: its controller decides
        self.fail_unused = fail_unused and not hasattr(config, "workerinput")
        self.unused: list[tuple[str, Any]] = []  # (test id, its property: a dict)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            found = [v for k, v in report.user_properties if k == UNUSED_PROPERTY]
            self.unused += [(report.nodeid, info) for info in found]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unused and self.fail_unused and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.unused:
            return
        tr, fail = terminalreporter, self.fail_unused
        tr.write_sep("=", "cassette: unused recordings", red=fail, yellow=not fail, bold=True)
        for nodeid, info in self.unused:
            tr.write_line(
                f"{nodeid}: {info['count']} of {info['total']} recorded interactions never "
                f"played ({info['path']})"
            )
            for key in info["keys"] if tr.config.get_verbosity() > 0 else []:  # the first few
                tr.write_line(f"    {key}")
        total = sum(int(info["count"]) for _, info in self.unused)
        what = f"{total} recorded interaction{'s' * (total != 1)} in {len(self.unused)} test"
        what += "s" * (len(self.unused) != 1)
        if fail:
            tr.write_line(f"--cassette-fail-unused: {what} never played; the run fails", red=True)
        else:
            tr.write_line(
                f"{what} never played: re-record with --cassette-mode=record if the code no "
                "longer makes these calls; --cassette-fail-unused makes this fail the run"
            )
