"""Episodes for code that never names one: :class:`Conversations` names a call's episode
by the conversation it carries (zero-code recording's ``episodes=``); the rule is in
docs/concepts/episodes.md."""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..types import EnvIndex, Json

__all__ = ["EPISODE_VARIABLE", "Conversations", "conversation"]

EPISODE_VARIABLE = "CASSETTE_EPISODE"  # names the episode of every call without one
_TEXT_KEYS = frozenset({"content", "text", "arguments", "partial_json", "refusal", "delta"})
_ID_KEYS = frozenset({"id", "call_id", "tool_use_id"})


def _dump(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def conversation(request: Json) -> list[bytes] | None:
    """The request's messages, each as canonical JSON; None when it has none."""
    roles = ("system", "instructions")
    out = [_dump({"role": k, "content": request[k]}) for k in roles if request.get(k)]
    messages = request.get("messages", request.get("input"))
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list):
        return out or None
    return out + [_dump(m) for m in messages]


def _start(messages: list[bytes]) -> bytes:
    for i, m in enumerate(messages):
        message = orjson.loads(m)
        if isinstance(message, dict) and message.get("role") == "user":
            return b"\n".join(messages[: i + 1])
    return b"\n".join(messages)


def _texts(value: Any, into: list[str], ids: set[str], key: str = "") -> None:
    """Collect the strings under text-like keys, in order, and the ids (tool call ids)."""
    if isinstance(value, dict):
        for k, item in value.items():
            _texts(item, into, ids, k)
    elif isinstance(value, list):
        for item in value:
            _texts(item, into, ids, key)
    elif isinstance(value, str):
        if key in _TEXT_KEYS:
            into.append(value)
        if key in _ID_KEYS:
            ids.add(value)


def _said(value: Any) -> tuple[str, set[str]]:
    texts: list[str] = []
    ids: set[str] = set()
    _texts(value, texts, ids)
    return "".join(texts), ids


def _slug(start: bytes) -> str:
    """The first words of the first user message: ``add-17-and-25`` (32 characters at most)."""
    last = orjson.loads(start.rsplit(b"\n", 1)[-1]) if start else None
    content = last.get("content") if isinstance(last, dict) else None
    texts: list[str] = []
    _texts({"content": content}, texts, set())
    slug = ""
    for word in re.findall(r"[a-z0-9]+", " ".join(texts).lower()):
        if len(slug) + len(word) + 1 > 32:
            break
        slug = f"{slug}-{word}" if slug else word
    return slug


def _head(start: bytes) -> str:
    """The name of the episodes that begin with ``start``, less their count."""
    digest = hashlib.sha256(start).hexdigest()
    slug = _slug(start)
    return f"{slug}.{digest[:6]}" if slug else digest[:10]


class _Episode:
    __slots__ = ("ids", "messages", "name", "raw", "reply", "start")

    def __init__(self, name: str, start: bytes, messages: list[bytes]) -> None:
        self.name, self.start, self.messages, self.reply = name, start, messages, ""
        self.ids: set[str] = set()
        self.raw: bytes | None = None  # a reply heard as JSON bytes, read when first asked

    def said(self, text: str, ids: set[str]) -> bool:
        """Whether this episode's last reply is the assistant message of ``text``/``ids``."""
        if self.raw is not None:
            self.reply, self.ids = _said(orjson.loads(self.raw))
            self.raw = None
        return bool(ids & self.ids) or bool(text and text in self.reply)

    def grows_into(self, start: bytes, messages: list[bytes]) -> bool:
        n = len(self.messages)
        return self.start == start and n < len(messages) and messages[:n] == self.messages


class Conversations:
    """Names a call's episode by its conversation; ``fixed`` ($CASSETTE_EPISODE) names all."""

    def __init__(
        self,
        fixed: EnvIndex | None = None,
        *,
        recorded: Iterable[EnvIndex] = (),
        rewind: Callable[[EnvIndex], None] | None = None,
    ) -> None:
        if fixed is None and os.environ.get(EPISODE_VARIABLE):
            named = os.environ[EPISODE_VARIABLE]
            fixed = int(named) if named.isdigit() else named
        self.fixed = fixed
        # replaying: how many recorded episodes began with each start, and how to rewind one
        self._recorded = Counter(
            str(e).rpartition(".")[0] for e in recorded if isinstance(e, str) and "." in e
        )
        self._rewind = rewind
        self._lock = threading.Lock()
        self._episodes: dict[str, _Episode] = {}  # by name, in the order they began
        self._starts: dict[bytes, int] = {}

    def name(self, request: Json) -> EnvIndex:
        """The episode ``request`` continues, or a new one."""
        if self.fixed is not None:
            return self.fixed
        messages = conversation(request)
        if messages is None:
            messages = [_dump(request)]
        start = _start(messages)
        with self._lock:
            found = self._continued(start, messages)
            if found is None:
                found = self._begin(start)
            found.messages = messages
            return found.name

    def fresh(self) -> Conversations:
        """A policy like this one that has named no episode yet."""
        policy = Conversations(self.fixed, rewind=self._rewind)
        policy._recorded = self._recorded
        return policy

    def _begin(self, start: bytes) -> _Episode:
        """A new episode of ``start``; replaying, the recorded ones round and round."""
        count = self._starts[start] = self._starts.get(start, -1) + 1
        head = _head(start)
        recorded = self._recorded.get(head, 0)
        if recorded and count >= recorded:
            count %= recorded
            if self._rewind is not None:
                self._rewind(f"{head}.{count}")
        episode = self._episodes[f"{head}.{count}"] = _Episode(f"{head}.{count}", start, [])
        return episode

    def _continued(self, start: bytes, messages: list[bytes]) -> _Episode | None:
        """The episode ``messages`` extends most (ties: the one whose reply it repeats)."""
        grown = [ep for ep in self._episodes.values() if ep.grows_into(start, messages)]
        longest = max((len(ep.messages) for ep in grown), default=0)
        best = [ep for ep in grown if len(ep.messages) == longest]
        if len(best) < 2:
            return best[0] if best else None
        text, ids = _said(orjson.loads(messages[longest]))
        return next((ep for ep in best if ep.said(text, ids)), best[0])

    def heard(self, env_index: EnvIndex, reply: Any) -> None:
        """Keep the text of the reply to the last call of an episode this policy named."""
        episode = self._episodes.get(env_index) if isinstance(env_index, str) else None
        if episode is None:
            return
        said = None if isinstance(reply, bytes) else _said(reply)  # (bytes: read if asked)
        with self._lock:
            if said is None:
                episode.raw = reply
            else:
                episode.raw = None
                episode.reply, episode.ids = said
