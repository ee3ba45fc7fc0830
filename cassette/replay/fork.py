"""Fork a recorded run: replay each episode from a base cassette while its requests match,
then call live from the first request that differs (or from a step you name) and record
everything into a new cassette that replays on its own.

.. code-block:: python

    with cassette.fork("runs/b.jsonl", from_cassette="runs/a.jsonl", fork_at={17: 6}) as cas:
        client = wrap_openai(OpenAI(), cas)    # any adapter: wrap_openai, wrap_anthropic,
        ...                                    # wrap_policy, patch_tau2, mcp_session

:func:`cassette.fork` opens a :class:`~cassette.Cassette` in record mode with a
:class:`ForkBase` handed to it (its ``mode`` reads ``append``: it serves and records):

- A call of an episode that has not forked is looked up in the base at the same key; if
  the base holds it and the request matches, the base's answer (or error) is served and
  copied into the new cassette. Otherwise the episode forks there: this call and every
  later call of the episode, on every channel, go live and are recorded.
- ``fork_at={env: step}`` forks episode ``env`` at step ``step`` of channel ``"llm"``
  (``fork_channel=``) even if the request matches; ``fork_at=callable(env, step) -> bool``
  for any rule.
- ``live_channels={"mcp"}``: calls on these channels always go live (a tool server whose
  state the prefix must rebuild); they still count as matching the base.
- Where each episode forked is recorded in the new cassette as one interaction on channel
  ``"fork"`` (step 0): ``{"base": path, "base_run": run id, "channel", "step", "why"}``.
  ``cassette diff BASE NEW`` shows them per episode (not as calls); :func:`fork_points`
  reads them.

``cassette fork BASE NEW -- cmd`` runs a command with ``$CASSETTE_FORK_FROM`` (and the
variables below) set, so the cassettes it opens (and ``cassette run``'s zero-code
recording) fork from BASE: :func:`ForkBase.named` reads them when a cassette opens.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from ..errors import CassetteMismatch
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
    """The base of a fork: what a cassette serves (and copies) for a call whose episode
    has not forked, and where each episode forked. Read once, never written."""

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
        if fork_at is None and os.environ.get(FORK_AT_VARIABLE):
            named = orjson.loads(os.environ[FORK_AT_VARIABLE])
            fork_at = {(int(k) if k.lstrip("-").isdigit() else k): int(v) for k, v in named.items()}
        if live_channels is None:
            live_channels = [c for c in os.environ.get("CASSETTE_FORK_LIVE", "").split(",") if c]
        channel = channel or os.environ.get("CASSETTE_FORK_CHANNEL") or "llm"
        return cls(path, fork_at=fork_at, live_channels=live_channels, channel=channel)

    def take(self, key: Key, verify: Callable[[Entry], None]) -> tuple[Entry | None, Json | None]:
        """(the base's entry to serve for the call at ``key``, None: it goes live; the
        point where its episode forks, if it forks at this call). ``verify(entry)`` raises
        :class:`CassetteMismatch` if the call's request is not the entry's."""
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


def fork_points(path: str | os.PathLike[str]) -> dict[Any, Json]:
    """Where each episode of a forked cassette left its base: env -> fork point."""
    index = load_index([Path(path)])
    return {
        env: dict(entry.response or {})
        for (env, channel, _), entry in index.entries.items()
        if channel == FORK_CHANNEL
    }
