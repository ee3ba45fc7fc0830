"""The pytest session's summary of recordings never played (carried on teardown reports, so
xdist works); ``--cassette-fail-unused`` fails the run."""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["UNUSED_PROPERTY", "UnusedSummary"]

UNUSED_PROPERTY = "cassette_unused"


class UnusedSummary:
    """Per-config hooks: gather the unused recordings, report them, set the exit status."""

    def __init__(self, fail_unused: bool, config: pytest.Config) -> None:
        self.fail_unused = fail_unused
        self.unused: list[tuple[str, dict[str, Any]]] = []  # (test id, its property)
        self.worker = hasattr(config, "workerinput")  # xdist: the controller decides

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for name, value in report.user_properties:
            if name == UNUSED_PROPERTY and isinstance(value, dict):
                self.unused.append((report.nodeid, value))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        fails = self.unused and self.fail_unused and not self.worker
        if fails and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.unused:
            return
        tr = terminalreporter
        fail = self.fail_unused
        tr.write_sep("=", "cassette: unused recordings", red=fail, yellow=not fail, bold=True)
        total = 0
        for nodeid, info in self.unused:
            count = int(info.get("count", 0))
            total += count
            tr.write_line(
                f"{nodeid}: {count} of {info.get('total', '?')} recorded interactions never "
                f"played ({info.get('path')})"
            )
            if tr.config.get_verbosity() > 0:  # the first few keys
                for key in info.get("keys", []):
                    tr.write_line(f"    {key}")
        what = f"{total} recorded interaction{'s' * (total != 1)} in {len(self.unused)} test"
        what += "s" * (len(self.unused) != 1)
        if fail:
            tr.write_line(f"--cassette-fail-unused: {what} never played; the run fails", red=True)
        else:
            tr.write_line(
                f"{what} never played: re-record with --cassette-mode=record if the code no "
                "longer makes these calls; --cassette-fail-unused makes this fail the run"
            )
