"""Python objects in a cassette: a pydantic model is its JSON dump plus ``"$type"``,
``"$private"`` and ``"$attrs"`` (underscore attributes), rebuilt through its own constructor;
streams of them teed to the caller while recording."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import warnings
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from pydantic import BaseModel

from ...errors import CassetteError, CassetteWarning
from ...format.codec import dumps, loads
from ...types import Json

__all__ = [
    "PRIVATE_KEY",
    "STREAM_KEY",
    "TYPE_KEY",
    "Tee",
    "TeeStream",
    "dump_object",
    "dump_state",
    "load_private",
    "load_state",
    "plain",
    "rebuild",
    "type_path",
]

TYPE_KEY = "$type"
PRIVATE_KEY = "$private"
ATTRS_KEY = "$attrs"
STREAM_KEY = "$stream"  # on a stream's first chunk: what the stream object was
DIFF, GONE = "$diff", "$gone"  # a chunk's private state relative to the chunk before
_META = (TYPE_KEY, PRIVATE_KEY, ATTRS_KEY, STREAM_KEY)
_SKIP = object()  # a private value that cannot be stored (a client, a lock, ...)


def plain(value: Any, what: str = "value") -> Any:
    """A JSON-able deep copy: pydantic models dumped, dataclasses and tuples converted."""
    try:
        return loads(dumps(value))
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise CassetteError(
            f"cannot store the policy's {what} in a cassette: {exc}; pass JSON-able data "
            "(dicts, lists, str, numbers, pydantic models, dataclasses)"
        ) from None


def type_path(obj: Any) -> str | None:
    """``"module:QualName"`` of ``obj``'s class, or None for plain data."""
    if obj is None or isinstance(obj, (dict, list, str, int, float, bool)):
        return None
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


@functools.lru_cache(maxsize=256)
def resolve(path: str) -> type[Any] | None:
    """The pydantic model or dataclass named ``path``, or None (never another callable)."""
    module, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError):
        return None
    if isinstance(obj, type) and (issubclass(obj, BaseModel) or dataclasses.is_dataclass(obj)):
        return obj
    return None  # never call an arbitrary callable named by a file


def _dump_mapping(value: Mapping[Any, Any]) -> Json:
    out = {str(k): dump_state(v) for k, v in value.items()}
    return {k: v for k, v in out.items() if v is not _SKIP}


def _dump_list(value: Iterable[Any]) -> list[Any]:
    return [v for v in map(dump_state, value) if v is not _SKIP]


def _dump_json(value: Any) -> Any:
    with contextlib.suppress(TypeError):
        return loads(dumps(value))
    return _SKIP


def dump_state(value: Any) -> Any:
    """Best-effort JSON of private state; what cannot be stored (a client, a lock) is left out."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    for kind, dump in _STATE_DUMPS:
        if isinstance(value, kind):
            return dump(value)
    return _dump_json(value)


def dump_object(obj: Any, what: str = "response") -> Json:
    """The JSON of a pydantic model, a dataclass (both with ``$type``) or a dict."""
    if isinstance(obj, dict):
        return cast(Json, plain(obj, what))
    if isinstance(obj, BaseModel):
        return _dump_model(obj, what)
    body = plain(obj, what)
    if not isinstance(body, dict):
        raise CassetteError(
            f"cannot store a {type(obj).__name__} as an object; pass a dict, a pydantic "
            "model or a dataclass"
        )
    body[TYPE_KEY] = type_path(obj)
    return body


def _dump_model(obj: BaseModel, what: str) -> Json:
    body = cast(Json, plain(obj.model_dump(mode="json", exclude_unset=True), what))
    body[TYPE_KEY] = type_path(obj)
    fields = type(obj).model_fields
    state = {
        PRIVATE_KEY: dump_state(obj.__pydantic_private__ or {}),
        ATTRS_KEY: dump_state(
            {k: v for k, v in vars(obj).items() if k[:1] == "_" and k not in fields}
        ),
    }
    body.update({key: value for key, value in state.items() if value})
    return body


def load_state(value: Any) -> Any:
    if isinstance(value, dict):
        if isinstance(value.get(TYPE_KEY), str):
            return rebuild(value[TYPE_KEY], value, warn=False)
        return {k: load_state(v) for k, v in value.items()}
    if isinstance(value, list):
        return [load_state(v) for v in value]
    return value


def _reconcile(obj: Any, data: Any) -> None:
    """Put back the fields a constructor dropped (litellm's ``logprobs=None``), recursively."""
    if isinstance(obj, BaseModel) and isinstance(data, dict):
        _reconcile_model(obj, data)
    elif isinstance(obj, list) and isinstance(data, list):
        for item, value in zip(obj, data, strict=False):
            _reconcile(item, value)


def _reconcile_model(obj: BaseModel, data: Json) -> None:
    fields = type(obj).model_fields
    present = vars(obj)
    extra = obj.__pydantic_extra__ or {}
    for key, value in data.items():
        held = present.get(key, extra.get(key, _SKIP))
        if held is _SKIP and key in fields:
            present[key] = value
        elif isinstance(value, (dict, list)):  # what may hold models
            _reconcile(held, value)
    obj.__pydantic_fields_set__.update(k for k in data if k in fields)


def load_private(obj: BaseModel, state: Json) -> None:
    """Put the stored private state back on a rebuilt model (its own attributes only)."""
    private = obj.__pydantic_private__
    if private is not None:
        private.update(
            {k: load_state(v) for k, v in state.items() if k in type(obj).__private_attributes__}
        )


def _construct(cls: type[BaseModel], body: Json) -> BaseModel:
    with contextlib.suppress(TypeError, ValueError):  # ValidationError is a ValueError
        return cls(**body)  # the type's own constructor builds what the library builds
    with contextlib.suppress(TypeError, ValueError):
        return cls.model_validate(body)
    return cls.model_construct(**body)  # a loose model


def _rebuild_model(cls: type[BaseModel], data: Json, body: Json) -> BaseModel:
    obj = _construct(cls, body)
    _reconcile(obj, body)
    load_private(obj, data.get(PRIVATE_KEY) or {})
    for key, value in (data.get(ATTRS_KEY) or {}).items():
        vars(obj)[key] = load_state(value)
    return obj


def rebuild(path: str | None, data: Any, *, warn: bool = True) -> Any:
    """Rebuild ``data`` (from :func:`dump_object`) as the type recorded at ``path``."""
    if path is None or not isinstance(data, dict):
        return data
    body = {k: v for k, v in data.items() if k not in _META}
    cls = resolve(path)
    if cls is not None and issubclass(cls, BaseModel):
        return _rebuild_model(cls, data, body)
    if cls is not None:
        with contextlib.suppress(TypeError):
            return cls(**body)
    if warn:
        warnings.warn(
            f"cassette: cannot rebuild the recorded type {path!r} from {sorted(body)} (not "
            "importable here, not a pydantic model or dataclass, or its fields changed); "
            "returning the recorded dict. Install the package that defines it, or re-record",
            CassetteWarning,
            stacklevel=3,
        )
    return body


_STATE_DUMPS: tuple[tuple[Any, Callable[[Any], Any]], ...] = (
    (BaseModel, dump_object),
    (Mapping, _dump_mapping),
    ((list, tuple), _dump_list),
)


def load_object(data: Json) -> Any:
    """Rebuild a dict from :func:`dump_object` as its ``$type`` (a plain dict without)."""
    path = data.get(TYPE_KEY)
    if not isinstance(path, str):
        return {k: v for k, v in data.items() if k != STREAM_KEY}
    return rebuild(path, data)


class Tee:
    """Chunk objects <-> chunk dicts around ``cas.stream``; ``head()`` goes on the first
    chunk (``$stream``). Private state is dumped again at the end (litellm sets usage after
    the last chunk), stored as its difference from the chunk before."""

    def __init__(
        self,
        dump: Callable[[Any], Json] = dump_object,
        load: Callable[[Json], Any] = load_object,
        head: Callable[[], Json] | None = None,
    ) -> None:
        self.dump, self.load, self.head = dump, load, head
        self._live: deque[Any] = deque()
        self._sent: list[tuple[Any, Json]] = []
        self._private: Any = None  # the private state of the chunk replayed last

    def _out(self, item: Any) -> Json:
        data = self.dump(item)
        if not self._sent and self.head is not None:
            data[STREAM_KEY] = self.head()
        self._live.append(item)
        self._sent.append((item, data))
        return data

    def finish(self) -> None:
        """The live stream ended: refresh the private state of what was sent."""
        for item, data in self._sent:
            fresh = self.dump(item)
            data.update({k: fresh[k] for k in (PRIVATE_KEY, ATTRS_KEY) if k in fresh})
        if self._sent and self.head is not None:
            self._sent[0][1][STREAM_KEY] = self.head()
        self._diff_private()

    def _diff_private(self) -> None:
        before = None
        for _, data in self._sent:
            private = data.get(PRIVATE_KEY)
            if isinstance(before, dict) and isinstance(private, dict):
                data[PRIVATE_KEY] = {DIFF: _diff(before, private)}
            before = private

    def live(self, items: Iterable[Any]) -> Iterator[Json]:
        for item in items:
            yield self._out(item)
        self.finish()

    async def alive(self, items: AsyncIterable[Any]) -> AsyncIterator[Json]:
        async for item in items:
            yield self._out(item)
        self.finish()

    def take(self, data: Json) -> Any:
        """The object for the chunk dict that the cassette's iterator just gave."""
        if self._live:
            return self._live.popleft()
        private = data.get(PRIVATE_KEY)
        if isinstance(private, dict) and DIFF in private and isinstance(self._private, dict):
            private = _patch(self._private, private[DIFF])
            data = {**data, PRIVATE_KEY: private}
        self._private = private
        return self.load(data)


class TeeStream:
    """A cassette stream handed over through a :class:`Tee` (``async for`` over either source)."""

    def __init__(
        self, source: Iterator[Json] | AsyncIterator[Json], tee: Tee, live: Any = None
    ) -> None:
        self._source, self._tee, self._live = source, tee, live

    def _next_data(self) -> Json:
        if not isinstance(self._source, Iterator):
            raise TypeError("this stream is asynchronous; use `async for`")
        return next(self._source)

    def _ready(self) -> bool:
        return isinstance(self._source, Iterator)

    def _take(self, data: Json) -> Any:
        return self._tee.take(data)

    def __next__(self) -> Any:
        return self._take(self._next_data())

    async def __anext__(self) -> Any:
        if not self._ready():
            return self._take(await cast(AsyncIterator[Json], self._source).__anext__())
        try:
            return self._take(self._next_data())
        except StopIteration:
            raise StopAsyncIteration from None

    def close(self) -> None:
        close = getattr(self._source, "close", None)
        if callable(close):
            close()

    async def aclose(self) -> None:
        close = getattr(self._source, "aclose", None)
        if callable(close):
            await close()
        else:
            self.close()


def _diff(before: Json, after: Json) -> Json:
    """What changed from ``before`` to ``after`` (nested dicts as their own difference)."""
    out: Json = {}
    for key, value in after.items():
        old = before.get(key, _SKIP)
        if old == value:
            continue
        both = isinstance(old, dict) and isinstance(value, dict)
        out[key] = {DIFF: _diff(old, value)} if both else value
    gone = [key for key in before if key not in after]
    if gone:
        out[GONE] = gone
    return out


def _patch(before: Json, diff: Json) -> Json:
    out = dict(before)
    for key in diff.get(GONE, ()):
        out.pop(key, None)
    for key, value in diff.items():
        if key == GONE:
            continue
        nested = isinstance(value, dict) and DIFF in value and isinstance(out.get(key), dict)
        out[key] = _patch(out[key], value[DIFF]) if nested else value
    return out
