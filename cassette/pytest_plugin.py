"""The pytest entry point (``pytest11``, name ``cassette``): the ``cassette`` fixture, the
``cassette`` marker and the ``--cassette-*`` options. The code and its documentation are in
:mod:`cassette.testing.plugin`; ``-p no:cassette`` turns the plugin off.
"""

from __future__ import annotations

from .testing.plugin import (
    DEFAULT_DIR,
    DEFAULT_MODE,
    MODES,
    cassette,
    default_path,
    pytest_addoption,
    pytest_configure,
    pytest_report_header,
    pytest_runtest_makereport,
)

__all__ = [
    "DEFAULT_DIR",
    "DEFAULT_MODE",
    "MODES",
    "cassette",
    "default_path",
    "pytest_addoption",
    "pytest_configure",
    "pytest_report_header",
    "pytest_runtest_makereport",
]
