"""orjson encoding, canonical request hashing and the message delta encoding.

Everything here is pure: bytes and dicts in, bytes and dicts out, no IO.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

import orjson

__all__ = [
    "LIT_KEY",
    "MESSAGE_FIELDS",
    "REF_KEY",
    "canonical_bytes",
    "decode_messages",
    "dumps",
    "encode_messages",
    "is_ref",
    "loads",
    "normalise_numbers",
    "normalise_request",
    "response_candidates",
    "sha256_hex",
]

MESSAGE_FIELDS = ("messages", "input")  # the conversation of a request
REF_KEY = "$ref"
LIT_KEY = "$lit"  # escapes a literal message that would read as a reference
_SORTED = orjson.OPT_SORT_KEYS
# A number token that normalisation could change: an integral float ("1.0", "-0.0") or an
# exponent, standing right after a JSON delimiter. Matching inside a string only costs the
# slow (exact) path, never a wrong hash.
_FLOAT_TOKEN = re.compile(rb"[:,\[]-?\d+(?:\.0(?=[,}\]])|(?:\.\d+)?[eE])")


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_unset=True)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    raise TypeError(f"cannot store a {type(obj).__name__} in a cassette; pass JSON-able data")


def dumps(obj: Any) -> bytes:
    """Compact JSON bytes (orjson; pydantic models are dumped in JSON mode)."""
    return orjson.dumps(obj, default=_default)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def _is_conversation(key: str, value: Any) -> bool:
    return key in MESSAGE_FIELDS and type(value) is list


def normalise_request(request: dict[str, Any]) -> dict[str, Any]:
    """Integral floats as ints in every parameter of a request (temperature, tools, ...);
    the conversation (``messages``/``input`` lists) is text and is kept as written."""
    return {k: v if _is_conversation(k, v) else normalise_numbers(v) for k, v in request.items()}


_MISS = object()
_PARAMS_CACHE: dict[bytes, dict[str, Any] | None] = {}


def canonical_bytes(request: dict[str, Any]) -> bytes:
    """Sorted-key compact JSON of :func:`normalise_request` of ``request``.

    The parameters other than the conversation (small, and the same call after call) are
    checked for number tokens once per distinct value (a cache keyed by their bytes); the
    conversation, the bulk of a request, is only dumped. The fast path is one orjson call.
    """
    params = {
        k: v
        for k, v in request.items()
        if not ((k == "messages" or k == "input") and type(v) is list)  # _is_conversation
    }
    raw = orjson.dumps(params, default=_default, option=_SORTED)
    normal = _PARAMS_CACHE.get(raw, _MISS)
    if normal is _MISS:
        normal = None
        if _FLOAT_TOKEN.search(raw) is not None:
            fixed = orjson.dumps(normalise_numbers(params), default=_default, option=_SORTED)
            normal = None if fixed == raw else orjson.loads(fixed)
        if len(_PARAMS_CACHE) >= 512:
            _PARAMS_CACHE.clear()
        _PARAMS_CACHE[raw] = normal
    if len(params) == len(request):
        return raw if normal is None else orjson.dumps(normal, option=_SORTED)
    if normal is not None:
        assert isinstance(normal, dict)
        merged = dict(normal)
        for key in MESSAGE_FIELDS:
            value = request.get(key)
            if type(value) is list:
                merged[key] = value
        request = merged
    return orjson.dumps(request, default=_default, option=_SORTED)


# --- message delta encoding -------------------------------------------------------------

Path = tuple[str | int, ...]


def response_candidates(response: dict[str, Any] | None) -> list[tuple[Path, dict[str, Any]]]:
    """The objects of a response that may reappear as messages of the next request."""
    if not isinstance(response, dict):
        return []
    out: list[tuple[Path, dict[str, Any]]] = []
    choices = response.get("choices")
    if isinstance(choices, list) and choices:
        msg = choices[0].get("message") if isinstance(choices[0], dict) else None
        if isinstance(msg, dict):
            out.append((("choices", 0, "message"), msg))
    msg = response.get("message")
    if isinstance(msg, dict):
        out.append((("message",), msg))
    output = response.get("output")
    if isinstance(output, list):
        out.extend((("output", i), item) for i, item in enumerate(output) if isinstance(item, dict))
    return out


def _as_ref(message: Any, candidates: list[tuple[Path, dict[str, Any]]]) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        return None
    for path, cand in candidates:
        if message == cand:
            return {REF_KEY: list(path)}
        if len(message) < len(cand) and all(k in cand for k in message):
            omit = [k for k in cand if k not in message]
            if all(cand[k] in (None, [], {}, "") for k in omit) and all(
                cand[k] == v for k, v in message.items()
            ):
                return {REF_KEY: list(path), "omit": omit}
    return None


def encode_messages(
    messages: Sequence[Any],
    base_messages: Sequence[Any] | None,
    base_response: dict[str, Any] | None,
) -> tuple[list[Any], int]:
    """Return (stored messages, keep): the messages after the common prefix with the base
    request, with copies of the base response's objects replaced by references."""
    keep = 0
    if base_messages:
        limit = min(len(messages), len(base_messages))
        while keep < limit and messages[keep] == base_messages[keep]:
            keep += 1
    candidates = response_candidates(base_response)
    stored: list[Any] = []
    for msg in messages[keep:]:
        ref = _as_ref(msg, candidates) if candidates else None
        if ref is not None:
            stored.append(ref)
        elif is_ref(msg) or (isinstance(msg, dict) and len(msg) == 1 and LIT_KEY in msg):
            stored.append({LIT_KEY: msg})
        else:
            stored.append(msg)
    return stored, keep


def _resolve(ref: dict[str, Any], base_response: dict[str, Any] | None) -> Any:
    node: Any = base_response
    for part in ref[REF_KEY]:
        node = node[part]  # KeyError/IndexError/TypeError: reported by the caller
    if not isinstance(node, dict):
        raise TypeError("reference does not point at an object")
    omit = ref.get("omit") or ()
    return {k: v for k, v in node.items() if k not in omit}


def is_ref(message: Any) -> bool:
    return isinstance(message, dict) and REF_KEY in message and len(message) <= 2


def decode_messages(
    stored: Sequence[Any],
    keep: int,
    base_messages: Sequence[Any],
    base_response: dict[str, Any] | None,
    on_error: Callable[[str], Exception],
) -> list[Any]:
    """Inverse of :func:`encode_messages`."""
    if keep > len(base_messages):
        raise on_error(f"delta keeps {keep} messages but its base request has {len(base_messages)}")
    out = list(base_messages[:keep])
    for msg in stored:
        if is_ref(msg):
            try:
                out.append(_resolve(msg, base_response))
            except (KeyError, IndexError, TypeError):
                raise on_error(
                    f"reference {msg[REF_KEY]!r} not found in the base response"
                ) from None
        elif isinstance(msg, dict) and len(msg) == 1 and LIT_KEY in msg:
            out.append(msg[LIT_KEY])
        else:
            out.append(msg)
    return out
