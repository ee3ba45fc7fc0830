"""Fixtures of the redact tests: a real S3 API on 127.0.0.1 (moto's server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.s3server import S3, s3_server


@pytest.fixture(scope="module")
def s3() -> Iterator[S3]:
    """moto's S3 server for the module's tests, with a bucket (tests/helpers/s3server.py)."""
    with s3_server() as server:
        yield server
