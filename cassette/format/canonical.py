"""A request's canonical form: what is hashed and compared.

:func:`canonical_parts` writes a request (less the keys a
:class:`~cassette.replay.matching.Matcher` leaves out) as sorted-key JSON with integral floats
as ints in its parameters, the conversation (``messages``/``input``) as written, in
three parts, ``head + conversation + tail``; :mod:`cassette.replay.matching` hashes them
(going on from the previous request of the same episode and channel) and explains a
mismatch. Pure: dicts in, bytes out, no IO.
"""

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
# A number token that normalisation could change: an integral float ("1.0", "-0.0") or an
# exponent, standing right after a JSON delimiter. Matching inside a string only costs the
# slow (exact) path, never a wrong hash.
_FLOAT_TOKEN = re.compile(rb"[:,\[]-?\d+(?:\.0(?=[,}\]])|(?:\.\d+)?[eE])")


def normalise_numbers(value: Any) -> Any:
    """Integral floats become ints (1.0 -> 1, -0.0 -> 0); containers are copied."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**63:
            return int(value)
        return value
    if isinstance(value, dict):
        return {k: normalise_numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise_numbers(v) for v in value]
    return value


def conversation_field(request: dict[str, Any]) -> str | None:
    """The key of the request's conversation: ``messages``, else ``input``, if a list."""
    for key in MESSAGE_FIELDS:
        if type(request.get(key)) is list:
            return key
    return None


def _is_conversation(key: str, value: Any) -> bool:
    return key in MESSAGE_FIELDS and type(value) is list


def normalise_request(request: dict[str, Any]) -> dict[str, Any]:
    """Integral floats as ints in every parameter of a request (temperature, tools, ...);
    the conversation (``messages``/``input`` lists) is text and is kept as written."""
    return {k: v if _is_conversation(k, v) else normalise_numbers(v) for k, v in request.items()}


def _normal_json(params: dict[str, Any]) -> bytes:
    """Sorted-key JSON of ``params`` with integral floats as ints."""
    raw = dumps_sorted(params)
    if _FLOAT_TOKEN.search(raw) is None:
        return raw
    return dumps_sorted(normalise_numbers(params))


def _split(params: dict[str, Any], key: str) -> tuple[bytes, bytes]:
    """(head, tail): the canonical JSON of ``params`` around a ``key`` placed in sorted
    order, e.g. ``{"model":"m","messages":`` and ``,"tools":[...]}``."""
    before = _normal_json({k: v for k, v in params.items() if k < key})
    after = _normal_json({k: v for k, v in params.items() if k > key})
    head = before[:-1] + (b',"' if len(before) > 2 else b'"') + key.encode() + b'":'
    return head, (b"," + after[1:] if len(after) > 2 else b"}")


# Parameters are small and the same call after call: their canonical parts are made once
# per distinct value, in a cache keyed by their raw bytes (and the conversation's key).
_Parts = tuple[bytes, bytes, bool]  # (head, tail, whether the parameters' JSON holds a null)
_PARAMS_CACHE: dict[tuple[str, bytes], _Parts] = {}
_dumps = orjson.dumps
_SORT = orjson.OPT_SORT_KEYS


def _params_parts(params: dict[str, Any], key: str, raw: bytes) -> _Parts:
    """The canonical parts of ``params`` (whose JSON is ``raw``) around ``key``, made and
    cached (the caller looks in the cache first)."""
    # NaN is written as null: where the bytes hold one, the values are looked at
    parts = (*_split(params, key), b"null" in raw)
    if len(_PARAMS_CACHE) >= 512:
        _PARAMS_CACHE.clear()
    _PARAMS_CACHE[key, raw] = parts
    return parts


# :func:`canonical_bytes` in three parts, ``(head, conversation, tail, field)``: the
# conversation's JSON (the bulk of a request) at hand on its own, hashed without being
# copied into one buffer; ``field`` is the key of the conversation (None: it has none)
Canonical = tuple[bytes, bytes, bytes, "str | None"]


def sha256_of(parts: Canonical) -> str:
    """The sha256 (hex) of the canonical bytes that ``parts`` make together."""
    h = hashlib.sha256(parts[0])
    h.update(parts[1])
    h.update(parts[2])
    return h.hexdigest()


def canonical_parts(request: dict[str, Any], *, live: bool = False) -> Canonical:
    """:func:`canonical_bytes` of ``request`` as :data:`Canonical` parts. A value that
    JSON cannot hold raises :class:`~cassette.format.codec.NotJSONError`; ``live`` (a request
    being made, not one read from a file) also refuses NaN and infinities outside the
    conversation (the caller checks the conversation's new messages)."""
    key = conversation_field(request)
    both = key == "messages" and type(request.get("input")) is list  # (never seen)
    if key is None or both:  # no conversation apart: the whole request in one part
        whole = dumps_sorted(normalise_request(request)) if both else _normal_json(request)
        if live and b"null" in whole:
            check_finite(request)
        return whole, b"", b"", None
    params = dict(request)
    del params[key]
    try:  # (the cache's key need not be canonical: the bytes tell the values apart)
        raw = _dumps(params)
    except TypeError:  # a pydantic model, bytes, ... (or what JSON cannot hold: raises)
        raw = dumps_sorted(params)
    parts = _PARAMS_CACHE.get((key, raw)) or _params_parts(params, key, raw)
    if live and parts[2]:
        check_finite(params)
    try:
        conversation = _dumps(request[key], option=_SORT)
    except TypeError:
        conversation = dumps_sorted(request[key])  # a pydantic model...; or NotJSONError
    return parts[0], conversation, parts[1], key


def canonical_bytes(request: dict[str, Any]) -> bytes:
    """Sorted-key compact JSON of :func:`normalise_request` of ``request``: integral
    floats in the parameters as ints; the conversation as written."""
    head, conversation, tail, _ = canonical_parts(request)
    return head + conversation + tail
