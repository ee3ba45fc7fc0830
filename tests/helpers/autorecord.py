"""Zero-code recording as a user runs it: ``cassette run`` (or ``cassette fork``) in a child
process, around the unmodified scripts under tests/fixtures/autorecord."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["NOWHERE", "SCRIPTS", "cassette_run"]

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "tests" / "fixtures" / "autorecord"
NOWHERE = "http://127.0.0.1:9"  # the discard port: nothing listens there


def cassette_run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``cassette run ARGS`` (``cassette fork ARGS`` after a first ``--fork-cli``) with this
    checkout importable and no ``CASSETTE_*`` variable inherited."""
    main = "import sys; from cassette.cli import main; sys.exit(main())"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CASSETTE_")}
    environ["PYTHONPATH"] = str(REPO)
    command = ["fork", *args[1:]] if args and args[0] == "--fork-cli" else ["run", *args]
    return subprocess.run(
        [sys.executable, "-c", main, *command],
        capture_output=True,
        text=True,
        timeout=120,
        env={**environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )
