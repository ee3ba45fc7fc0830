"""Streams: chunks handed over as they arrive and recorded at the end, or replayed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from typing import Any

from ..errors import CassetteError
from ..storage.index import Entry
from ..types import Json
from .context import LIVE, inside

__all__ = ["arecord", "areplay", "record", "recorded_chunks", "replay", "stream_response"]

# done(chunks, exception or None, whether the stream ran to its end or failed)
Done = Callable[[list[Json], BaseException | None, bool], None]
_END: Any = object()  # the end of a live stream


def recorded_chunks(entry: Entry, fix: str, response: Json | None) -> list[Json]:
    """The chunks of ``response``, the one ``entry`` serves (:meth:`Entry.served`)."""
    chunks = (response or {}).get("chunks")
    if not isinstance(chunks, list):
        raise CassetteError(f"{entry.source}:{entry.line} was not recorded as a stream; {fix}")
    return chunks


def replay(chunks: list[Json], error: Callable[[], BaseException] | None) -> Iterator[Json]:
    yield from chunks
    if error is not None:
        raise error()


async def areplay(
    chunks: list[Json], error: Callable[[], BaseException] | None
) -> AsyncIterator[Json]:
    for chunk in chunks:
        yield chunk
    if error is not None:
        raise error()


def record(live: Callable[[], Iterable[Json]], done: Done, owner: object) -> Iterator[Json]:
    """Tee the live chunks; ``done`` records them when the stream ends, fails or closes."""
    got: list[Json] = []
    try:
        chunks = inside(owner, lambda: iter(live()))
        while (chunk := inside(owner, next, chunks, _END)) is not _END:
            got.append(chunk)
            yield chunk
    except GeneratorExit:
        done(got, None, False)
        raise
    except Exception as exc:
        done(got, exc, True)
        raise
    done(got, None, True)


async def arecord(
    live: Callable[[], AsyncIterator[Json]], done: Done, owner: object
) -> AsyncIterator[Json]:
    got: list[Json] = []
    try:
        chunks = inside(owner, lambda: live().__aiter__())
        while (chunk := await _anext(owner, chunks)) is not _END:
            got.append(chunk)
            yield chunk
    except GeneratorExit:
        done(got, None, False)
        raise
    except Exception as exc:
        done(got, exc, True)
        raise
    done(got, None, True)


async def _anext(owner: object, chunks: AsyncIterator[Json]) -> Any:
    token = LIVE.set(owner)
    try:
        return await anext(chunks, _END)
    finally:
        LIVE.reset(token)


def stream_response(
    chunks: list[Json], assemble: Callable[[list[Json]], Json] | None, whole: bool
) -> tuple[Json, Json]:
    """(the response of a stream: chunks and assembled message; meta: its usage)."""
    response: Json = {"chunks": chunks}
    if assemble is not None and whole:
        response["message"] = assemble(chunks)
    usage = _usage(response)
    return response, ({} if usage is None else {"usage": usage})


def _usage(response: Json) -> Any:
    message = response.get("message")
    if isinstance(message, dict) and message.get("usage") is not None:
        return message["usage"]
    for chunk in reversed(response["chunks"]):
        if isinstance(chunk, dict):
            usage = chunk.get("usage") or (chunk.get("response") or {}).get("usage")
            if usage is not None:
                return usage
    return None
