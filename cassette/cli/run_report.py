"""What ``cassette run`` says when its command ends: what a record run wrote, in one line (if
nothing, the TCP connections the command opened: a client the import hook does not know)."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import click
import orjson

from ..format.entry import Key
from .console import plural

__all__ = ["Recorded"]


def _keys(path: Path) -> set[Key]:
    """The keys a cassette holds (none when it is missing or unreadable)."""
    from ..errors import CassetteError
    from ..storage.index import load_index

    if not path.exists():
        return set()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return set(load_index([path]).entries)
    except (CassetteError, OSError):
        return set()


def _say(text: str) -> None:
    click.echo(f"cassette run: {text}", err=True)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """What changes when a cassette file is written or replaced (None: there is none)."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_mtime_ns, info.st_size


class Recorded:
    """A ``cassette run``'s cassette before its command runs, to say what the command added."""

    def __init__(self, where: str, mode: str) -> None:
        self.path = Path(where)
        # (auto on an existing cassette replays it: nothing is written; a URL is not reported)
        new = mode == "auto" and not self.path.exists()
        self.writes = "://" not in where and (mode in ("record", "append") or new)
        self.before = _keys(self.path) if mode == "append" and self.writes else set()
        self.stamp = _stamp(self.path)
        self.net_log = Path(tempfile.mkdtemp(prefix="cassette-run-")) / "connections.json"

    def _connections(self) -> str:
        try:
            seen: dict[str, int] = orjson.loads(self.net_log.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return ""
        finally:
            self.net_log.unlink(missing_ok=True)
            os.rmdir(self.net_log.parent)
        return ", ".join(f"{where} ({n})" for where, n in sorted(seen.items(), key=lambda i: -i[1]))

    def report(self, served: bool, failed: bool) -> None:
        """One line on stderr about what a record run wrote (not if it failed and wrote nothing)."""
        opened = self._connections()  # (read, and the file removed, in any case)
        if not self.writes or (failed and _stamp(self.path) == self.stamp):
            return
        new = _keys(self.path) - self.before
        if new:
            episodes = plural(len({env for env, _, _ in new}), "episode")
            _say(f"recorded {plural(len(new), 'call')} in {episodes} to {self.path}")
            return
        _say(f"recorded nothing to {self.path}: {_why(served, opened)}")


def _why(served: bool, opened: str) -> str:
    if served:
        return "the command sent no call to OPENAI_BASE_URL or ANTHROPIC_BASE_URL"
    if opened:
        return (
            f"no hooked client made a call, but the command opened TCP connections to "
            f"{opened}: a client the hook does not know; try --via server, which points "
            "OPENAI_BASE_URL and ANTHROPIC_BASE_URL at a recording server"
        )
    return "the command made no call through openai, anthropic or litellm"
