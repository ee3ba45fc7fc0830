"""The message delta encoding: the count of leading messages shared with the previous
request of the episode and channel (``keep``), then the rest, a copy of an object of the
previous response as ``{"$ref": path}``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property, reduce
from operator import getitem
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
_EMPTY: tuple[Any, ...] = (None, [], {}, "")

Path = tuple[str | int, ...]
_CHOICE: Path = ("choices", 0, "message")
_MESSAGE: Path = ("message",)


def response_candidates(response: dict[str, Any] | None) -> list[tuple[Path, dict[str, Any]]]:
    """The objects of a response that may reappear as messages of the next request."""
    if not isinstance(response, dict):
        return []
    found = [(_CHOICE, _first_message(response.get("choices")))]
    found.append((_MESSAGE, response.get("message")))
    output = response.get("output")
    if isinstance(output, list):
        found += [(("output", i), item) for i, item in enumerate(output)]
    return [(path, obj) for path, obj in found if isinstance(obj, dict)]


def _first_message(choices: Any) -> Any:
    """``choices[0]["message"]``, or None."""
    first = choices[0] if isinstance(choices, list) and choices else None
    return first.get("message") if isinstance(first, dict) else None


@dataclass
class RefTarget:
    """A response's object that may reappear as a message of the next request."""

    path: Path
    raw: bytes
    kind: tuple[Any, Any]  # its (role, type): a message of another kind is not it

    @cached_property
    def view(self) -> dict[str, Any]:
        """The object, parsed once (to compare a message field by field)."""
        found: dict[str, Any] = orjson.loads(self.raw)
        return found

    def ref(self, message: dict[str, Any], raw: bytes) -> dict[str, Any] | None:
        """``{"$ref": path}`` (with ``"omit"``: less some empty fields) if ``message``
        (JSON ``raw``) is this object; else None."""
        if raw == self.raw:  # (both sorted-key JSON)
            return {REF_KEY: list(self.path)}
        omit = self._omitted(message, raw)
        return None if omit is None else {REF_KEY: list(self.path), "omit": omit}

    def _omitted(self, message: dict[str, Any], raw: bytes) -> list[str] | None:
        """The empty fields of this object that ``message`` is it without; else None."""
        view = self.view
        if not message.keys() <= view.keys():
            return None
        omit = [k for k in view if k not in message]
        if _all_empty(view, omit) and raw == _sorted({k: view[k] for k in message}):
            return omit
        return None


def _all_empty(obj: dict[str, Any], keys: list[str]) -> bool:
    return all(obj[k] in _EMPTY for k in keys)


@dataclass
class MessageBase:
    """What the next delta is relative to: the previous messages and response (as JSON)."""

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
        """How many leading messages of ``messages`` (JSON ``raw``) are the base's."""
        if self.count == 0:
            return 0
        end = len(self.raw) - 1  # the base list without its closing bracket
        if raw.startswith(self.raw[:end]) and raw[end : end + 1] in (b",", b"]"):
            return self.count
        return _shared(orjson.loads(self.raw), messages)  # the history was rewritten

    def stored(self, message: Any) -> Any:
        """``message`` as a delta line stores it: a reference to the target it copies, a
        literal escaped where it would read as one, else itself."""
        if not isinstance(message, dict):
            return message
        kind, raw = (message.get("role"), message.get("type")), b""
        for target in self.targets:
            if target.kind == kind:
                raw = raw or _sorted(message)
                if (ref := target.ref(message, raw)) is not None:
                    return ref
        # (a literal that would read as a reference or an escape is escaped)
        return {LIT_KEY: message} if is_ref(message) or _is_lit(message) else message


def _shared(old: Sequence[Any], new: Sequence[Any]) -> int:
    pairs = enumerate(zip(old, new, strict=False))
    return next((i for i, (a, b) in pairs if _sorted(a) != _sorted(b)), min(len(old), len(new)))


def encode_messages(
    messages: Sequence[Any], base: MessageBase, raw: bytes | None = None
) -> tuple[list[Any], int]:
    """(stored messages, keep): the messages after the prefix shared with the base, copies
    of its response's objects as references (``raw``: ``messages``' sorted-key JSON)."""
    keep = base.common_prefix(messages, _sorted(messages) if raw is None else raw)
    return [base.stored(msg) for msg in messages[keep:]], keep


def is_ref(message: Any) -> bool:
    return isinstance(message, dict) and REF_KEY in message and len(message) <= 2


def _is_lit(message: Any) -> bool:
    return isinstance(message, dict) and len(message) == 1 and LIT_KEY in message


def _resolve(ref: dict[str, Any], base_response: Any) -> Any:
    node = reduce(getitem, ref[REF_KEY], base_response)  # (errors: for the caller)
    if not isinstance(node, dict):
        raise TypeError("reference does not point at an object")
    omit = ref.get("omit") or ()
    return {k: v for k, v in node.items() if k not in omit}


def _decoded(message: Any, base_response: dict[str, Any] | None) -> Any:
    if is_ref(message):
        return _resolve(message, base_response)
    return message[LIT_KEY] if _is_lit(message) else message


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
        try:
            out.append(_decoded(msg, base_response))
        except (KeyError, IndexError, TypeError):
            raise on_error(f"reference {msg[REF_KEY]!r} not found in the base response") from None
    return out
