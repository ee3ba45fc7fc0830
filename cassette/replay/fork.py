"""Fork a recorded run: replay each episode from a base cassette while its requests match,
then go live from the first that differs (or a step named by ``fork_at``), recording it all
into a new cassette (docs/guides/forking.md)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from ..errors import CassetteMismatch, CassetteModeError
from ..format.runid import set_run_id
from ..redact import Redactor
from ..storage.index import Entry, Key, load_index
from ..storage.remote import local_or_url
from ..types import EnvIndex, Json
from .modes import Mode
from .opening import open_parts

__all__ = ["FORK_AT_VARIABLE", "FORK_CHANNEL", "FORK_VARIABLE", "ForkBase", "fork_points"]

FORK_CHANNEL = "fork"  # where the new cassette records each episode's fork point
FORK_VARIABLE = "CASSETTE_FORK_FROM"  # the base cassette of every cassette.open()
FORK_AT_VARIABLE = "CASSETTE_FORK_AT"  # JSON {"env": step} for fork_at
ForkAt = Mapping[Any, int] | Callable[[Any, int], bool] | None


class ForkBase:
    """The base of a fork: what it serves until an episode forks, and where each forked."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fork_at: ForkAt = None,
        live_channels: Iterable[str] = (),
        channel: str = "llm",
    ) -> None:
        local = local_or_url(path)
        url = local if isinstance(local, str) else None
        opened = open_parts(Path(local), url, path, Mode.REPLAY, Redactor(), {}, False)
        self.path, self.index = opened.path, opened.index
        self.run = set_run_id(self.index.headers) if self.index.headers else None
        self.fork_at, self.live_channels, self.channel = fork_at, frozenset(live_channels), channel
        self.forked: dict[EnvIndex, Json] = {}  # env -> where it forked
        self._lock = threading.Lock()

    @classmethod
    def named(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        fork_at: ForkAt = None,
        live_channels: Iterable[str] | None = None,
        channel: str | None = None,
    ) -> ForkBase | None:
        """The base at ``path``, else ``$CASSETTE_FORK_FROM`` (None if neither names one);
        what is not given comes from what ``cassette fork`` sets: ``$CASSETTE_FORK_AT``
        (JSON), ``$CASSETTE_FORK_CHANNEL``, ``$CASSETTE_FORK_LIVE`` (comma-separated)."""
        path = path or os.environ.get(FORK_VARIABLE)
        if not path:
            return None
        if fork_at is None:
            fork_at = _fork_at_from_env()
        if live_channels is None:
            live_channels = [c for c in os.environ.get("CASSETTE_FORK_LIVE", "").split(",") if c]
        channel = channel or os.environ.get("CASSETTE_FORK_CHANNEL") or "llm"
        return cls(path, fork_at=fork_at, live_channels=live_channels, channel=channel)

    def refuse(self, local: Path, url: str | None) -> None:
        """Refuse to record a fork into its own base (at ``local``, or ``url``)."""
        if url is None and local.resolve() == self.path.resolve():
            raise CassetteModeError(
                f"a fork cannot record into its base {self.path}; name another cassette for it"
            )

    def take(self, key: Key, verify: Callable[[Entry], None]) -> tuple[Entry | None, Json | None]:
        """(the base's entry to serve at ``key``, or None; the fork point, if it forks)."""
        env, channel, step = key
        with self._lock:
            if env in self.forked or channel in self.live_channels:
                return None, None
            entry = self.index.entries.get(key)
            if channel == self.channel and self._named(env, step):
                why = "fork_at"
            elif entry is None:
                why = "not in the base"
            else:
                try:
                    verify(entry)
                    return entry, None
                except CassetteMismatch:
                    why = "mismatch"
            point: Json = {"base": str(self.path), "base_run": self.run, "channel": channel}
            self.forked[env] = point = {**point, "step": step, "why": why}
            return None, point

    def _named(self, env: EnvIndex, step: int) -> bool:
        if self.fork_at is None:
            return False
        if callable(self.fork_at):
            return bool(self.fork_at(env, step))
        at = self.fork_at.get(env, self.fork_at.get(str(env)))
        return at is not None and step >= at


def _fork_at_from_env() -> ForkAt:
    raw = os.environ.get(FORK_AT_VARIABLE)
    named = orjson.loads(raw) if raw else None
    if not named:
        return None
    return {(int(k) if k.lstrip("-").isdigit() else k): int(v) for k, v in named.items()}


def fork_points(path: str | os.PathLike[str]) -> dict[Any, Json]:
    """Where each episode of a forked cassette left its base: env -> fork point."""
    index = load_index([Path(path)])
    return {
        env: dict(entry.response or {})
        for (env, channel, _), entry in index.entries.items()
        if channel == FORK_CHANNEL
    }
