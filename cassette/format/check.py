"""Whether a line is valid: :func:`line_faults` by the models; the ``*_ok`` functions, the
same rules by hand (fast)."""

from __future__ import annotations

from typing import Any

from .checksum import CHECKSUM_KEY
from .delta import SAME_ALL
from .version import FORMAT, VERSION

__all__ = [
    "INTERACTION_KEYS",
    "body_ok",
    "delta_ok",
    "head_ok",
    "header_fault",
    "header_ok",
    "interaction_ok",
    "line_faults",
    "outcome_ok",
]

INTERACTION_KEYS = frozenset(
    {"type", "env_index", "channel", "step", "delta"}
    | {"request", "request_sha256", "response", "error", "meta"}
)
_REQUIRED = frozenset({"type", "env_index", "step", "request", "request_sha256"})
_DELTA_KEYS = frozenset({"base", "keep", "field", "same"})
_ERROR_KEYS = frozenset({"type", "message", "data"})
# the keys of a parsed line's header or outcome: (the default of one left out, its types)
_Want = dict[str, tuple[Any, tuple[type, ...]]]
_TEXT: tuple[Any, tuple[type, ...]] = (None, (str,))
_HEADER: _Want = {
    "type": _TEXT, "format": _TEXT, "version": (VERSION, (int,)), "created_at": _TEXT,
    "producer": _TEXT, "meta": ({}, (dict,)),
}  # fmt: skip
_OUTCOME: _Want = {
    "type": _TEXT, "env_index": (None, (int, str)), "reward": (None, (float, type(None))),
    "terminated": (None, (bool, type(None))), "info": ({}, (dict,)),
}  # fmt: skip
_HEX = "0123456789abcdef"


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _names(same: Any) -> bool:
    return same == SAME_ALL or (type(same) is list and all(type(k) is str for k in same))


def delta_ok(delta: Any) -> bool:
    """Whether ``delta`` is valid: counts ``base``, ``keep``; ``same`` names or ``"*"``."""
    return (
        isinstance(delta, dict)
        and delta.keys() <= _DELTA_KEYS
        and _count(delta.get("base"))
        and _count(delta.get("keep"))
        and delta.get("field", "messages") in ("messages", "input")
        and _names(delta.get("same", []))
    )


def head_ok(env: Any, channel: Any, step: Any, delta: Any) -> bool:
    """Whether a line's key (int or str env_index, str channel, step >= 0) and delta are valid."""
    return (
        type(env) in (int, str)  # (parsed JSON: a bool is not an int here)
        and isinstance(channel, str)
        and _count(step)
        and (delta is None or delta_ok(delta))
    )


def _error_ok(error: Any) -> bool:
    return error is None or (
        isinstance(error, dict)
        and error.keys() <= _ERROR_KEYS
        and isinstance(error.get("type"), str)
        and isinstance(error.get("message"), str)
        and isinstance(error.get("data", {}), dict)
    )


def body_ok(response: Any, error: Any, meta: Any) -> bool:
    """Whether a line's response, error and meta are valid."""
    return (
        isinstance(response, (dict, type(None)))
        and _error_ok(error)
        and isinstance(meta, dict)
        and isinstance(meta.get(CHECKSUM_KEY, ""), str)
    )


def interaction_ok(obj: dict[str, Any]) -> bool:
    """Whether the interaction line ``obj`` is valid."""
    return (
        INTERACTION_KEYS >= obj.keys() >= _REQUIRED
        and head_ok(obj["env_index"], obj.get("channel", "llm"), obj["step"], obj.get("delta"))
        and isinstance(obj["request"], dict)
        and _sha_ok(obj["request_sha256"])
        and body_ok(obj.get("response"), obj.get("error"), obj.get("meta", {}))
    )


def _sha_ok(sha: Any) -> bool:
    return isinstance(sha, str) and len(sha) == 64 and not sha.strip(_HEX)


def _fits(obj: dict[str, Any], want: _Want) -> bool:
    """Whether ``obj`` holds only keys of ``want``, each value (or default) of their types."""
    return obj.keys() <= want.keys() and all(
        type(obj.get(key, default)) in types for key, (default, types) in want.items()
    )


def header_ok(obj: dict[str, Any]) -> bool:
    """Whether the header line ``obj`` is valid (and of this format and version)."""
    want = ("header", FORMAT, VERSION)  # (the types checked first: True == 1)
    return _fits(obj, _HEADER) and (obj["type"], obj["format"], obj.get("version", VERSION)) == want


def outcome_ok(obj: dict[str, Any]) -> bool:
    """Whether the outcome line ``obj`` is valid."""
    return _fits(obj, _OUTCOME) and obj["type"] == "outcome"


def header_fault(obj: dict[str, Any]) -> str | None:
    """What makes the header ``obj`` unreadable (another format, a newer version), or None."""
    version = obj.get("version")
    if obj.get("format") != FORMAT:
        return f"not a rollout-cassette header (format {obj.get('format')!r})"
    if type(version) is int and version > VERSION:
        return (
            f"written in format version {version}, newer than this rollout-cassette reads "
            f"(version {VERSION}); upgrade with `pip install -U rollout-cassette`"
        )
    return None


def _model_faults(obj: dict[str, Any]) -> list[str]:
    from pydantic import ValidationError  # the models load on first use

    from .models import LINE_ADAPTER

    try:
        LINE_ADAPTER.validate_python(obj, strict=True)
    except ValidationError as exc:
        found: dict[str, list[str]] = {}
        for err in exc.errors():
            found.setdefault(_where(err["loc"]), []).append(err["msg"])
        return [f"{loc}: {' or '.join(dict.fromkeys(msgs))}" for loc, msgs in found.items()]
    return []


def _where(loc: tuple[int | str, ...]) -> str:
    """A fault's place in the line (less the model's and the union's tags)."""
    return ".".join(str(p) for p in loc[1:] if p not in ("int", "str")) or "line"


def line_faults(obj: dict[str, Any]) -> list[str]:
    """Every fault of the parsed line ``obj`` (as its ``type`` says), each ``where: what``."""
    kind = obj.get("type")
    if (kind == "interaction" and interaction_ok(obj)) or header_ok(obj) or outcome_ok(obj):
        return []  # (the models, which import pydantic, only for a line with a fault)
    if kind == "header" and (found := header_fault(obj)) is not None:
        return [found]
    faults = _model_faults(obj)
    if kind == "interaction" and not faults:  # the one rule the models lack
        return ["meta.checksum: Input should be a valid string"]
    return faults
