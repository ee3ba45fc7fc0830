"""Fixtures of the storage tests: helper processes and a real S3 API on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.procs import Workers
from tests.helpers.s3server import S3, s3_server


@pytest.fixture
def workers() -> Iterator[Workers]:
    """Start helper processes (tests/helpers/worker.py); every one is cleaned up after."""
    started = Workers()
    yield started
    started.cleanup()


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    """moto's S3 server for the module's tests, with a bucket (tests/helpers/s3server.py)."""
    with s3_server() as server:
        yield server
