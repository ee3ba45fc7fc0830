"""The message delta encoding: a request stored as what it adds to the one before.

A request's conversation is stored as the count of leading messages it shares with the
previous request of its episode and channel (``keep``) plus the messages after them, where
a message that is an object of the previous response is a ``{"$ref": path}``. Pure: lists
and dicts in and out, no IO.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .codec import dumps_sorted as _sorted

__all__ = [
    "LIT_KEY",
    "REF_KEY",
    "SAME_ALL",
    "MessageBase",
    "RefTarget",
    "decode_messages",
    "encode_messages",
    "is_ref",
    "response_candidates",
]

REF_KEY = "$ref"
LIT_KEY = "$lit"  # escapes a literal message that would read as a reference
SAME_ALL = "*"  # delta.same: every top-level key of the base that this line does not hold

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
        if not message.keys() <= cand.keys():
            return None
        omit = [k for k in cand if k not in message]
        if any(cand[k] not in (None, [], {}, "") for k in omit):
            return None
        if raw != _sorted({k: cand[k] for k in message}):
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
    keep, targets = 0, []
    if base is not None:
        keep = base.common_prefix(messages, _sorted(messages) if raw is None else raw)
        targets = base.targets
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
        elif is_ref(msg) or _is_lit(msg):
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


def _is_lit(message: Any) -> bool:
    return isinstance(message, dict) and len(message) == 1 and LIT_KEY in message


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
        elif _is_lit(msg):
            out.append(msg[LIT_KEY])
        else:
            out.append(msg)
    return out
