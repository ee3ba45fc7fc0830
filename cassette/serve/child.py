"""``cassette run`` for a command that is not Python: a ``cassette serve`` started for it
on 127.0.0.1, and the variables that point the command's clients at it
(``OPENAI_BASE_URL``, ``OPENAI_API_BASE``, ``ANTHROPIC_BASE_URL``); the upstreams are the
values those variables had, else the providers' public APIs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

from ..errors import CassetteError
from .upstream import PUBLIC

__all__ = ["ServedChild", "is_python"]


def is_python(command: Sequence[str]) -> bool:
    """Whether ``command`` runs Python: a ``python*`` executable, or a script whose first
    line starts Python (``#!/usr/bin/env python3``, a console script of a virtualenv)."""
    path = shutil.which(command[0]) if command else None
    if path is None:
        return False
    if os.path.basename(path).startswith("python"):
        return True
    try:
        with open(path, "rb") as script:
            first = script.readline(256)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


class ServedChild:
    """A ``cassette serve`` process for one command: :meth:`start` returns the variables
    for the command's environment; :meth:`stop` closes the server (and its cassette)."""

    def __init__(self, path: str, mode: str, env: Mapping[str, str]) -> None:
        upstream = env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_BASE")
        anthropic = env.get("ANTHROPIC_BASE_URL")
        self.argv = [
            sys.executable, "-m", "cassette", "serve", "--cassette", path, "--mode", mode,
            "--port", "0", "--upstream", upstream or PUBLIC["openai"] + "/v1",
            "--anthropic-upstream", anthropic or PUBLIC["anthropic"],
        ]  # fmt: skip
        self.env = dict(env)
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> dict[str, str]:
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, text=True, env=self.env, stdin=subprocess.DEVNULL
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY "):
            self.proc.wait()
            raise CassetteError(f"cassette serve did not start for the command; {line.strip()}")
        url = line.split()[1]
        root = url.removesuffix("/v1")
        return {"OPENAI_BASE_URL": url, "OPENAI_API_BASE": url, "ANTHROPIC_BASE_URL": root}

    def stop(self) -> int:
        """Stop the server (it writes its cassette as it closes); its exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait()
