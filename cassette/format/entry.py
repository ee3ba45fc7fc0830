"""One recorded interaction (:class:`Entry`, keyed by :data:`Key`) and the checks that
turn a parsed line into one: its structure, its delta, the header, eval-protocol lines.

An entry's request may be delta-encoded; :meth:`Entry.full_request` rebuilds it along
its chain of delta bases only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import CassetteFormatError
from ..types import EnvIndex
from .checksum import CHECKSUM_KEY, checksum
from .codec import NotJSONError
from .delta import SAME_ALL, decode_messages
from .version import FORMAT, VERSION

__all__ = [
    "INTERACTION_KEYS",
    "Entry",
    "EnvIndex",
    "Key",
    "check_header",
    "check_interaction",
    "delta_ok",
    "ep_entry",
    "format_error",
    "validate_line",
]

Key = tuple[EnvIndex, str, int]

INTERACTION_KEYS = frozenset(
    {
        "type",
        "env_index",
        "channel",
        "step",
        "delta",
        "request",
        "request_sha256",
        "response",
        "error",
        "meta",
    }
)
_REQUIRED = frozenset({"type", "env_index", "step", "request", "request_sha256"})
_DELTA_KEYS = frozenset({"base", "keep", "field", "same"})


@dataclass(eq=False)
class Entry:
    """One recorded interaction, as stored (the request may be delta-encoded)."""

    env_index: EnvIndex
    channel: str
    step: int
    request: dict[str, Any]
    sha: str | None  # None: an eval-protocol line, matched on messages alone
    response: dict[str, Any] | None
    error: dict[str, Any] | None
    meta: dict[str, Any]
    delta: dict[str, Any] | None = None
    base: Entry | None = None
    source: str = ""
    line: int = 0
    broken: CassetteFormatError | None = None  # set: this line cannot be served (why)
    checked: bool = False  # its meta.checksum was verified

    def check(self) -> None:
        """Raise :class:`CassetteFormatError` naming the line if it cannot be served: its
        delta chain is broken, or its response or error is not what was recorded (its
        ``meta.checksum`` does not match). Checked once; lines without a checksum pass."""
        if self.broken is not None:
            raise self.broken
        if self.checked:
            return
        self.verify_checksum(self.meta, self.response, self.error)
        self.checked = True

    def verify_checksum(self, meta: dict[str, Any], response: Any, error: Any) -> None:
        """Raise :class:`CassetteFormatError` naming the line if ``meta.checksum`` is there
        and does not match ``response`` and ``error``."""
        want = meta.get(CHECKSUM_KEY)
        if want is None:
            return
        try:
            got = checksum(response, error)
        except NotJSONError as exc:
            got = str(exc)
        if got != want:
            raise format_error(
                self.source,
                self.line,
                "the response or error is not what was recorded (meta.checksum does "
                "not match: the line was edited or damaged); restore the file, or "
                "re-record this episode",
            )

    def served(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """(response, error), as replay serves them."""
        return self.response, self.error

    @property
    def key(self) -> Key:
        return (self.env_index, self.channel, self.step)

    def param(self, key: str) -> Any:
        """A top-level request value (``model``, ...), followed into the delta bases
        without rebuilding messages; None if the request has no such key."""
        node: Entry | None = self
        while node is not None:
            if key in node.request:
                return node.request[key]
            same = node.delta.get("same", ()) if node.delta is not None else ()
            if same != SAME_ALL and key not in same:
                return None
            node = node.base
        return None

    def full_request(self) -> dict[str, Any]:
        """The request as it was made, rebuilt along the chain of delta bases."""
        if self.broken is not None:
            raise self.broken
        if self.delta is None:
            return self.request
        chain: list[Entry] = []
        node: Entry | None = self
        while node is not None and node.delta is not None:
            chain.append(node)
            node = node.base
        full = node.request if node is not None else {}
        for entry in reversed(chain):
            full = entry.rebuild(full)
        return full

    def rebuild(self, base_full: dict[str, Any]) -> dict[str, Any]:
        """This entry's full request, given the full request of its delta base."""
        if self.delta is None:
            return self.request
        fld = self.delta.get("field", "messages")
        same = self.delta.get("same", ())
        if same == SAME_ALL:
            out = {key: value for key, value in base_full.items() if key != fld}
        else:
            out = {key: base_full[key] for key in same if isinstance(key, str) and key in base_full}
        out.update(self.request)
        out[fld] = decode_messages(
            _messages_of(self.request, fld) or [],
            int(self.delta.get("keep", 0)),
            _messages_of(base_full, fld) or [],
            self.base.response if self.base is not None else None,
            _error_for(self),
        )
        return out


def _error_for(entry: Entry) -> Callable[[str], Exception]:
    return lambda why: format_error(entry.source, entry.line, why)


def _messages_of(request: dict[str, Any], fld: str) -> list[Any] | None:
    value = request.get(fld)
    return value if isinstance(value, list) else None


def format_error(path: str, line: int, why: str) -> CassetteFormatError:
    return CassetteFormatError(
        f"{path}:{line}: {why}; run `cassette validate {path}` for every fault",
        path=path,
        line=line,
    )


def check_interaction(obj: dict[str, Any], path: str, line: int) -> None:
    keys = obj.keys()
    env = obj.get("env_index")
    step = obj.get("step")
    delta = obj.get("delta")
    ok = (
        keys <= INTERACTION_KEYS
        and keys >= _REQUIRED
        and isinstance(env, (int, str))
        and not isinstance(env, bool)
        and isinstance(obj.get("channel", "llm"), str)
        and type(step) is int
        and step >= 0
        and isinstance(obj["request"], dict)
        and isinstance(obj["request_sha256"], str)
        and len(obj["request_sha256"]) == 64
        and isinstance(obj.get("response"), (dict, type(None)))
        and isinstance(obj.get("error"), (dict, type(None)))
        and isinstance(obj.get("meta", {}), dict)
        and isinstance(obj.get("meta", {}).get(CHECKSUM_KEY, ""), str)
        and (delta is None or delta_ok(delta))
    )
    if not ok:
        validate_line(obj, path, line)
        raise format_error(path, line, "malformed interaction")


def delta_ok(delta: Any) -> bool:
    if not isinstance(delta, dict):
        return False
    base, keep, same = delta.get("base"), delta.get("keep"), delta.get("same", [])
    return (
        delta.keys() <= _DELTA_KEYS
        and type(base) is int
        and base >= 0
        and type(keep) is int
        and keep >= 0
        and delta.get("field", "messages") in ("messages", "input")
        and (same == SAME_ALL or (type(same) is list and all(type(k) is str for k in same)))
    )


def validate_line(obj: dict[str, Any], path: str, line: int) -> None:
    """Full pydantic validation of one line, as a one-line CassetteFormatError."""
    from pydantic import ValidationError  # the models load on first use: a cheap import

    from .models import LINE_ADAPTER

    try:
        LINE_ADAPTER.validate_python(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"][1:]) or "line"
        raise format_error(path, line, f"{loc}: {err['msg']}") from None


def check_header(obj: dict[str, Any], path: str, line: int) -> None:
    if obj.get("format") != FORMAT:
        raise format_error(
            path, line, f"not a rollout-cassette file (format {obj.get('format')!r})"
        )
    version = obj.get("version")
    if isinstance(version, int) and version > VERSION:
        raise CassetteFormatError(
            f"{path}: written in cassette format version {version}, newer than this "
            f"rollout-cassette reads (version {VERSION}); upgrade with "
            "`pip install -U rollout-cassette`",
            path=path,
            line=line,
        )
    validate_line(obj, path, line)


def ep_entry(obj: dict[str, Any], path: str, line: int) -> Entry:
    messages = obj.get("messages")
    env, step = obj.get("env_index"), obj.get("step")
    if (
        not isinstance(messages, list)
        or not isinstance(env, (int, str))
        or isinstance(env, bool)
        or type(step) is not int
    ):
        raise format_error(
            path, line, "eval-protocol line needs env_index, an int step and messages"
        )
    last = None
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            last = i
            break
    if last is None:
        raise format_error(path, line, "eval-protocol line has no assistant message to replay")
    return Entry(
        env_index=env,
        channel="llm",
        step=step,
        request={"messages": messages[:last]},
        sha=None,
        response={"choices": [{"index": 0, "message": messages[last]}]},
        error=None,
        meta={"source": "eval-protocol"},
        source=path,
        line=line,
    )
