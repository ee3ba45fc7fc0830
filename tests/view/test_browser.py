"""Chromium is optional for a developer (the browser tests skip, naming the install command)
and required where ``CASSETTE_REQUIRE_BROWSER`` is set, as in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.browser import REQUIRE_VARIABLE, chromium_executable


def test_without_chromium_the_test_skips_naming_the_install_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(REQUIRE_VARIABLE, raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"`apt-get update && apt-get install -y "):
        chromium_executable()
    monkeypatch.setenv(REQUIRE_VARIABLE, "0")
    with pytest.raises(pytest.skip.Exception, match="optional"):
        chromium_executable()


def test_without_chromium_the_test_fails_where_a_browser_is_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv(REQUIRE_VARIABLE, "1")
    with pytest.raises(pytest.fail.Exception, match=rf"install -y chromium.*{REQUIRE_VARIABLE}"):
        chromium_executable()


def test_chromium_on_the_path_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "chromium"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv(REQUIRE_VARIABLE, "1")
    assert chromium_executable() == str(exe)
