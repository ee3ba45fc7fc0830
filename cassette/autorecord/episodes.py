"""Episodes for code that never names one: :class:`AutoEpisodes`, a cassette whose calls
find their episode from the conversation they carry.

The rule, for a request with no :func:`cassette.episode` around it and no
``$CASSETTE_EPISODE``:

- Its conversation is its messages: ``system`` / ``instructions`` first, then ``messages``
  or ``input``. Its *start* is everything up to and including the first user message.
- A call continues an episode when that episode's last request's conversation is a strict
  prefix of its own (the conversation grew); the longest such prefix wins, and between
  equals, the episode whose last reply holds the text of the next assistant message.
- Otherwise it starts an episode: ``"<hash of the start>.<n>"``, ``n`` counting the
  episodes that began with the same start (0 for the first).

So concurrent conversations (threads, asyncio tasks) separate on their own and replay
finds them again, whatever order they run in: two conversations with the same start get
the same first answer from the recording, whichever of the two episodes each one takes.
Limits: a conversation that is not a growing message list (one that drops or rewrites
earlier messages, summarises its history, or calls with a fresh list each turn) starts a
new episode at each change; requests without messages (embeddings, model lists) each key
on their whole body. Name episodes with ``cassette.episode()`` where that matters.
"""

from __future__ import annotations

import contextvars
import hashlib
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import orjson

from ..replay.context import current_episode
from ..types import Json

__all__ = ["EPISODE_VARIABLE", "AutoEpisodes", "conversation"]

EPISODE_VARIABLE = "CASSETTE_EPISODE"  # names the episode of every call without one
_NESTED: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "cassette_auto_nested", default=False
)
_TEXT_KEYS = frozenset({"content", "text", "arguments", "partial_json", "refusal", "delta"})
_ID_KEYS = frozenset({"id", "call_id", "tool_use_id"})


def _dump(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def conversation(request: Json) -> list[bytes] | None:
    """The request's messages, each as canonical JSON; None when it has none."""
    out: list[bytes] = []
    for key in ("system", "instructions"):
        if request.get(key):
            out.append(_dump({"role": key, "content": request[key]}))
    messages = request.get("messages", request.get("input"))
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    if not isinstance(messages, list):
        return out or None
    out.extend(_dump(m) for m in messages)
    return out


def _start(messages: list[bytes]) -> bytes:
    for i, m in enumerate(messages):
        message = orjson.loads(m)
        if isinstance(message, dict) and message.get("role") == "user":
            return b"\n".join(messages[: i + 1])
    return b"\n".join(messages)


def _texts(value: Any, into: list[str], ids: set[str], key: str = "") -> None:
    """The strings under text-like keys, in order (replies and stream chunks alike), and
    the identifiers (tool call ids) anywhere."""
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


class _Episode:
    __slots__ = ("ids", "messages", "name", "reply", "start")

    def __init__(self, name: str, start: bytes, messages: list[bytes]) -> None:
        self.name, self.start, self.messages, self.reply = name, start, messages, ""
        self.ids: set[str] = set()

    def said(self, text: str, ids: set[str]) -> bool:
        """Whether this episode's last reply is the assistant message of ``text``/``ids``."""
        return bool(ids & self.ids) or bool(text and text in self.reply)


class AutoEpisodes:
    """A cassette (anything with ``call``/``acall``/``stream``/``astream``) whose calls
    made outside any :func:`cassette.episode` take the episode of their conversation.
    Calls that a live call of another adapter makes (litellm over the openai SDK) go
    straight through, so they are recorded once."""

    def __init__(self, cas: Any) -> None:
        self.cas = cas
        self._lock = threading.Lock()
        self._episodes: list[_Episode] = []
        self._starts: dict[bytes, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cas, name)

    # -- the rule ----------------------------------------------------------------------------
    def episode_of(self, request: Json) -> tuple[Any, _Episode | None]:
        named = current_episode()
        if named is not None:
            return named, None
        fixed = os.environ.get(EPISODE_VARIABLE)
        if fixed:
            return (int(fixed) if fixed.isdigit() else fixed), None
        messages = conversation(request)
        if messages is None:
            messages = [_dump({k: v for k, v in request.items()})]
        start = _start(messages)
        with self._lock:
            best: list[_Episode] = []
            for ep in self._episodes:
                n = len(ep.messages)
                if ep.start == start and n < len(messages) and messages[:n] == ep.messages:
                    if not best or n > len(best[0].messages):
                        best = [ep]
                    elif n == len(best[0].messages):
                        best.append(ep)
            if best:
                found = best[0]
                if len(best) > 1:
                    nxt: list[str] = []
                    ids: set[str] = set()
                    _texts(orjson.loads(messages[len(found.messages)]), nxt, ids)
                    said = "".join(nxt)
                    found = next((ep for ep in best if ep.said(said, ids)), found)
                found.messages = messages
                return found.name, found
            count = self._starts.get(start, 0)
            self._starts[start] = count + 1
            name = f"{hashlib.sha256(start).hexdigest()[:10]}.{count}"
            episode = _Episode(name, start, messages)
            self._episodes.append(episode)
            return name, episode

    def _heard(self, episode: _Episode | None, reply: Any) -> None:
        if episode is not None:
            texts: list[str] = []
            ids: set[str] = set()
            _texts(reply, texts, ids)
            with self._lock:
                episode.reply, episode.ids = "".join(texts), ids

    # -- the cassette's calls --------------------------------------------------------------
    def call(self, request: Json, live: Callable[[], Json], **options: Any) -> Json:
        if _NESTED.get():
            return live()
        env, episode = self.episode_of(request)
        reply = self.cas.call(request, _nested(live), env_index=env, **options)
        self._heard(episode, reply)
        return reply  # type: ignore[no-any-return]

    async def acall(self, request: Json, live: Callable[[], Any], **options: Any) -> Json:
        if _NESTED.get():
            return await live()  # type: ignore[no-any-return]
        env, episode = self.episode_of(request)

        async def nested() -> Json:
            token = _NESTED.set(True)
            try:
                return await live()  # type: ignore[no-any-return]
            finally:
                _NESTED.reset(token)

        reply = await self.cas.acall(request, nested, env_index=env, **options)
        self._heard(episode, reply)
        return reply  # type: ignore[no-any-return]

    def stream(self, request: Json, live: Callable[[], Any], **options: Any) -> Iterator[Json]:
        if _NESTED.get():
            return iter(live())
        env, episode = self.episode_of(request)
        chunks = self.cas.stream(request, _nested_stream(live), env_index=env, **options)
        return _SyncTee(chunks, lambda seen: self._heard(episode, seen))

    def astream(
        self, request: Json, live: Callable[[], Any], **options: Any
    ) -> AsyncIterator[Json]:
        if _NESTED.get():
            return live()  # type: ignore[no-any-return]
        env, episode = self.episode_of(request)
        chunks = self.cas.astream(request, _nested_astream(live), env_index=env, **options)
        return _AsyncTee(chunks, lambda seen: self._heard(episode, seen))


def _nested(live: Callable[[], Any]) -> Callable[[], Any]:
    """``live`` run with nested cassette calls passed straight through (for a stream: while
    it is being read)."""

    def run() -> Any:
        token = _NESTED.set(True)
        try:
            return live()
        finally:
            _NESTED.reset(token)

    return run


def _nested_stream(live: Callable[[], Any]) -> Callable[[], Iterator[Any]]:
    def run() -> Iterator[Any]:
        token = _NESTED.set(True)
        try:
            chunks = iter(live())
        finally:
            _NESTED.reset(token)
        try:
            while True:
                token = _NESTED.set(True)
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
                finally:
                    _NESTED.reset(token)
                yield chunk
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()

    return run


def _nested_astream(live: Callable[[], Any]) -> Callable[[], AsyncIterator[Any]]:
    async def run() -> AsyncIterator[Any]:
        token = _NESTED.set(True)
        try:
            chunks = live().__aiter__()
        finally:
            _NESTED.reset(token)
        try:
            while True:
                token = _NESTED.set(True)
                try:
                    chunk = await chunks.__anext__()
                except StopAsyncIteration:
                    return
                finally:
                    _NESTED.reset(token)
                yield chunk
        finally:
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()

    return run


class _SyncTee:
    """The chunks of a stream, passed on and kept to learn the reply's text."""

    def __init__(self, chunks: Any, done: Callable[[list[Any]], None]) -> None:
        self.chunks, self.done = chunks, done
        self.seen: list[Any] = []

    def __iter__(self) -> _SyncTee:
        return self

    def __next__(self) -> Json:
        try:
            chunk = next(self.chunks)
        except StopIteration:
            self.done(self.seen)
            raise
        self.seen.append(chunk)
        return chunk  # type: ignore[no-any-return]

    def close(self) -> None:
        self.done(self.seen)
        self.chunks.close()


class _AsyncTee:
    def __init__(self, chunks: Any, done: Callable[[list[Any]], None]) -> None:
        self.chunks, self.done = chunks, done
        self.seen: list[Any] = []

    def __aiter__(self) -> _AsyncTee:
        return self

    async def __anext__(self) -> Json:
        try:
            chunk = await self.chunks.__anext__()
        except StopAsyncIteration:
            self.done(self.seen)
            raise
        self.seen.append(chunk)
        return chunk  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        self.done(self.seen)
        await self.chunks.aclose()
