"""A real S3 API on 127.0.0.1 for the object-storage tests: moto's server mode.

:func:`s3_server` starts ``ThreadedMotoServer`` on port 0, points s3fs at it through
the environment (``AWS_ENDPOINT_URL`` and fake credentials, which child processes and
Ray workers inherit), makes a bucket, and stops the server at the end.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["S3", "s3_server"]


@dataclass
class S3:
    endpoint: str
    bucket: str
    env: dict[str, str]

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


@contextlib.contextmanager
def s3_server() -> Iterator[S3]:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        import fsspec

        fsspec.filesystem("s3").clear_instance_cache()
        bucket = f"b{secrets.token_hex(4)}"
        fsspec.filesystem("s3", skip_instance_cache=True).mkdir(bucket)
        yield S3(env["AWS_ENDPOINT_URL"], bucket, env)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        server.stop()
