"""orjson encoding, canonical request hashing and the message delta encoding.

Everything here is pure: bytes and dicts in, bytes and dicts out, no IO.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

__all__ = [
    "LIT_KEY",
    "MESSAGE_FIELDS",
    "REF_KEY",
    "SAME_ALL",
    "Canonical",
    "HashChain",
    "MessageBase",
    "RefTarget",
    "canonical_bytes",
    "canonical_parts",
    "conversation_field",
    "decode_messages",
    "dumps",
    "encode_messages",
    "is_ref",
    "loads",
    "normalise_numbers",
    "normalise_request",
    "response_candidates",
]

MESSAGE_FIELDS = ("messages", "input")  # the conversation of a request
REF_KEY = "$ref"
LIT_KEY = "$lit"  # escapes a literal message that would read as a reference
SAME_ALL = "*"  # delta.same: every top-level key of the base that this line does not hold
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


def _sorted(obj: Any) -> bytes:
    return orjson.dumps(obj, default=_default, option=_SORTED)


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


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
    raw = orjson.dumps(params, default=_default, option=_SORTED)
    if _FLOAT_TOKEN.search(raw) is None:
        return raw
    return orjson.dumps(normalise_numbers(params), default=_default, option=_SORTED)


def _split(params: dict[str, Any], key: str) -> tuple[bytes, bytes]:
    """(head, tail): the canonical JSON of ``params`` around a ``key`` placed in sorted
    order, e.g. ``{"model":"m","messages":`` and ``,"tools":[...]}``."""
    before = _normal_json({k: v for k, v in params.items() if k < key})
    after = _normal_json({k: v for k, v in params.items() if k > key})
    head = before[:-1] + (b',"' if len(before) > 2 else b'"') + key.encode() + b'":'
    return head, (b"," + after[1:] if len(after) > 2 else b"}")


# Parameters are small and the same call after call: their canonical parts are made once
# per distinct value, in a cache keyed by their raw bytes (and the conversation's key).
_PARAMS_CACHE: dict[tuple[str, bytes], tuple[bytes, bytes]] = {}


class Canonical(NamedTuple):
    """:func:`canonical_bytes` in three parts, ``head + conversation + tail``, so that the
    conversation's JSON (the bulk of a request) is at hand on its own, and is hashed
    without being copied into one buffer."""

    head: bytes
    conversation: bytes
    tail: bytes
    field: str | None  # the key of the conversation, if the request has one list of it

    def sha256(self) -> str:
        h = hashlib.sha256(self.head)
        h.update(self.conversation)
        h.update(self.tail)
        return h.hexdigest()

    def sha256_from(self, chain: HashChain | None) -> tuple[str, HashChain | None]:
        """(:meth:`sha256`, the chain for the next request of the same key). The same
        hash, but when this request extends the one ``chain`` was taken from (equal head,
        conversation JSON that starts with the earlier one's) only the new bytes are
        hashed: over an episode each byte is hashed once, not once a step."""
        conv = self.conversation
        if self.field is None or len(conv) < 2:
            return self.sha256(), None
        end = len(conv) - 1  # the conversation list without its closing bracket
        if chain is not None and chain.head == self.head and conv.startswith(chain.prefix):
            state = chain.state.copy()
            state.update(memoryview(conv)[len(chain.prefix) : end])
        else:
            state = hashlib.sha256(self.head)
            state.update(memoryview(conv)[:end])
        final = state.copy()
        final.update(conv[end:])
        final.update(self.tail)
        return final.hexdigest(), HashChain(self.head, conv[:end], state)


class HashChain(NamedTuple):
    """sha256 state after a request's head and its conversation less the closing bracket."""

    head: bytes
    prefix: bytes
    state: Any  # hashlib's sha256 object (its type is private)


def canonical_parts(request: dict[str, Any]) -> Canonical:
    """:func:`canonical_bytes` of ``request`` as :class:`Canonical` parts."""
    key = conversation_field(request)
    if key is None:
        return Canonical(_normal_json(request), b"", b"", None)
    if key == "messages" and type(request.get("input")) is list:  # both (never seen)
        whole = orjson.dumps(normalise_request(request), default=_default, option=_SORTED)
        return Canonical(whole, b"", b"", None)
    params = {k: v for k, v in request.items() if k != key}
    cache_key = (key, orjson.dumps(params, default=_default, option=_SORTED))
    parts = _PARAMS_CACHE.get(cache_key)
    if parts is None:
        parts = _split(params, key)
        if len(_PARAMS_CACHE) >= 512:
            _PARAMS_CACHE.clear()
        _PARAMS_CACHE[cache_key] = parts
    conversation = orjson.dumps(request[key], default=_default, option=_SORTED)
    return Canonical(parts[0], conversation, parts[1], key)


def canonical_bytes(request: dict[str, Any]) -> bytes:
    """Sorted-key compact JSON of :func:`normalise_request` of ``request``: integral
    floats in the parameters as ints; the conversation as written."""
    head, conversation, tail, _ = canonical_parts(request)
    return head + conversation + tail


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


@dataclass
class RefTarget:
    """An object of a response that may reappear as a message of the next request, held
    as JSON bytes taken when the response was recorded."""

    path: Path
    raw: bytes
    kind: tuple[Any, Any]  # its (role, type): a message of another kind is not it
    _view: dict[str, Any] | None = None

    def ref(self, message: Any, raw: bytes) -> dict[str, Any] | None:
        """``{"$ref": path}`` if ``message`` (whose JSON is ``raw``) is this object, with
        ``"omit"`` if it is this object less some of its empty fields; else None."""
        if raw == self.raw:  # (both sorted-key JSON)
            return {REF_KEY: list(self.path)}
        if not isinstance(message, dict):
            return None
        if self._view is None:
            self._view = orjson.loads(self.raw)
        cand = self._view
        if len(message) > len(cand) or not all(k in cand for k in message):
            return None
        omit = [k for k in cand if k not in message]
        if any(cand[k] not in (None, [], {}, "") for k in omit):
            return None
        if raw != _sorted({k: v for k, v in cand.items() if k in message}):
            return None
        return {REF_KEY: list(self.path), "omit": omit} if omit else {REF_KEY: list(self.path)}


@dataclass
class MessageBase:
    """What the next request's delta is relative to: the previous request's messages and
    its response's reusable objects, as sorted-key JSON bytes (a snapshot: editing the
    originals afterwards changes nothing; key order does not count, as in the hash)."""

    count: int
    raw: bytes
    targets: list[RefTarget]

    @classmethod
    def of(
        cls, messages: Sequence[Any], response: dict[str, Any] | None, raw: bytes | None = None
    ) -> MessageBase:
        """``raw``: the sorted-key JSON of ``messages``, if it is at hand."""
        targets = [
            RefTarget(path, _sorted(obj), (obj.get("role"), obj.get("type")))
            for path, obj in response_candidates(response)
        ]
        return cls(len(messages), _sorted(messages) if raw is None else raw, targets)

    def common_prefix(self, messages: Sequence[Any], raw: bytes) -> int:
        """How many leading messages of ``messages`` (whose sorted-key JSON is ``raw``)
        are, byte for byte, those of the base: one prefix test when the list was extended."""
        if self.count == 0:
            return 0
        end = len(self.raw) - 1  # the base list without its closing bracket
        if raw.startswith(self.raw[:end]) and raw[end : end + 1] in (b",", b"]"):
            return self.count
        keep = 0  # the history was rewritten: message by message
        for old, new in zip(orjson.loads(self.raw), messages, strict=False):
            if _sorted(old) != _sorted(new):
                break
            keep += 1
        return keep


def encode_messages(
    messages: Sequence[Any], base: MessageBase | None, raw: bytes | None = None
) -> tuple[list[Any], int]:
    """Return (stored messages, keep): the messages after the common prefix with the base
    request, with copies of the base response's objects replaced by references.

    Messages compare as sorted-key JSON bytes (``raw``: that of ``messages``, if it is at
    hand), so what is kept rebuilds to the same hash."""
    keep = 0
    if base is not None:
        keep = base.common_prefix(messages, _sorted(messages) if raw is None else raw)
    targets = base.targets if base is not None else []
    stored: list[Any] = []
    for msg in messages[keep:]:
        ref = None
        if targets and isinstance(msg, dict):
            kind, data = (msg.get("role"), msg.get("type")), b""
            for target in targets:
                if target.kind == kind:
                    data = data or _sorted(msg)
                    if (ref := target.ref(msg, data)) is not None:
                        break
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
