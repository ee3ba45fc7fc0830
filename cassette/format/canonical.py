"""A request's canonical form, what is hashed and compared: sorted-key JSON with integral
floats as ints in its parameters and the conversation (``messages``/``input``) as written,
in three parts, ``head + conversation + tail``. Pure: dicts in, bytes out, no IO."""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from .codec import check_finite, dumps_sorted

__all__ = [
    "MESSAGE_FIELDS",
    "Canonical",
    "canonical_bytes",
    "canonical_parts",
    "conversation_field",
    "normalise_numbers",
    "normalise_request",
    "sha256_of",
]

MESSAGE_FIELDS = ("messages", "input")  # the conversation of a request
# an integral float or an exponent after a delimiter (a match in a string costs the slow path)
_FLOAT_TOKEN = re.compile(rb"[:,\[]-?\d+(?:\.0(?=[,}\]])|(?:\.\d+)?[eE])")
_PARAMS_CACHE: dict[tuple[str, bytes], tuple[bytes, bytes, bool]] = {}  # (head, tail, null)
_dumps = orjson.dumps
_SORT = orjson.OPT_SORT_KEYS
# (head, conversation, tail, the conversation's key or None)
Canonical = tuple[bytes, bytes, bytes, "str | None"]


def normalise_numbers(value: Any) -> Any:
    """Integral floats become ints (1.0 -> 1, -0.0 -> 0); containers are copied."""
    if isinstance(value, float):
        return _integral(value)
    if isinstance(value, dict):
        return {k: normalise_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise_numbers(v) for v in value]
    return value


def _integral(value: float) -> int | float:
    """``value`` as an int if it is integral and fits 64 bits."""
    return int(value) if value.is_integer() and abs(value) < 2**63 else value


def conversation_field(request: dict[str, Any]) -> str | None:
    """The key of the request's conversation: ``messages``, else ``input``, if a list."""
    for key in MESSAGE_FIELDS:
        if type(request.get(key)) is list:
            return key
    return None


def normalise_request(request: dict[str, Any]) -> dict[str, Any]:
    """Integral floats as ints in every parameter; the conversation is kept as written."""
    return {
        k: v if k in MESSAGE_FIELDS and type(v) is list else normalise_numbers(v)
        for k, v in request.items()
    }


def _normal_json(params: dict[str, Any]) -> bytes:
    raw = dumps_sorted(params)
    return raw if _FLOAT_TOKEN.search(raw) is None else dumps_sorted(normalise_numbers(params))


def _split(params: dict[str, Any], key: str) -> tuple[bytes, bytes]:
    """(head, tail): the canonical JSON of ``params`` around ``key`` in sorted order."""
    before = _normal_json({k: v for k, v in params.items() if k < key})
    after = _normal_json({k: v for k, v in params.items() if k > key})
    return _open(before) + key.encode() + b'":', _close(after)


def _open(before: bytes) -> bytes:
    """``{"a":1,"`` or ``{"``: an object's JSON left open for one more key."""
    return before[:-1] + (b',"' if len(before) > 2 else b'"')


def _close(after: bytes) -> bytes:
    """``,"z":1}`` or ``}``: an object's JSON as the rest of one with a key before."""
    return b"," + after[1:] if len(after) > 2 else b"}"


def _params_parts(params: dict[str, Any], key: str, raw: bytes) -> tuple[bytes, bytes, bool]:
    """:func:`_split`, and whether ``raw`` holds a null (a NaN?), cached."""
    parts = (*_split(params, key), b"null" in raw)
    if len(_PARAMS_CACHE) >= 512:
        _PARAMS_CACHE.clear()
    _PARAMS_CACHE[key, raw] = parts
    return parts


def sha256_of(parts: Canonical) -> str:
    """The sha256 (hex) of the canonical bytes that ``parts`` make together."""
    h = hashlib.sha256(parts[0])
    h.update(parts[1])
    h.update(parts[2])
    return h.hexdigest()


def _whole(request: dict[str, Any], key: str | None, live: bool) -> Canonical:
    """No conversation apart (none, or both fields): the whole request in one part."""
    whole = _normal_json(request) if key is None else dumps_sorted(normalise_request(request))
    if live and b"null" in whole:
        check_finite(request)
    return whole, b"", b"", None


def canonical_parts(request: dict[str, Any], *, live: bool = False) -> Canonical:
    """:func:`canonical_bytes` as parts; NotJSONError for what JSON cannot hold (``live``:
    also a NaN outside the conversation)."""
    key = conversation_field(request)
    if key is None or (key == "messages" and type(request.get("input")) is list):
        return _whole(request, key, live)
    params = dict(request)
    del params[key]
    try:  # unsorted: a cache key need only tell values apart
        raw = _dumps(params)
    except TypeError:
        raw = dumps_sorted(params)
    parts = _PARAMS_CACHE.get((key, raw)) or _params_parts(params, key, raw)
    if live and parts[2]:
        check_finite(params)
    try:
        conversation = _dumps(request[key], option=_SORT)
    except TypeError:
        conversation = dumps_sorted(request[key])
    return parts[0], conversation, parts[1], key


def canonical_bytes(request: dict[str, Any]) -> bytes:
    """Sorted-key compact JSON of :func:`normalise_request` of ``request``."""
    head, conversation, tail, _ = canonical_parts(request)
    return head + conversation + tail
