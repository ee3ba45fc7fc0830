"""One recorded interaction, :class:`Entry`, decoded from its line when asked; delta
requests are rebuilt along their bases (:meth:`Entry.full_request`, :class:`Rebuilder`)."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any, cast

import orjson

from ..errors import CassetteFormatError
from ..types import EnvIndex, Json
from .check import body_ok
from .checksum import CHECKSUM_KEY, RESPONSE, checksum
from .codec import NotJSONError
from .delta import SAME_ALL, decode_messages

__all__ = ["Entry", "EnvIndex", "Key", "Rebuilder", "ep_entry", "format_error"]

Key = tuple[EnvIndex, str, int]

_loads = orjson.loads
_AFTER = len(RESPONSE)


def format_error(path: str, line: int, why: str) -> CassetteFormatError:
    return CassetteFormatError(
        f"{path}:{line}: {why}; run `cassette validate {path}` for every fault",
        path=path,
        line=line,
    )


@dataclass(slots=True, eq=False)
class Entry:
    """One recorded interaction: key, hash, delta; the rest from ``kept`` (the parsed line)
    or decoded from ``raw`` (``tail``: where ``"response":`` starts; ``stop``: where it
    ends, if checked as loaded)."""

    at: InitVar[Key]  # (env_index, channel, step)
    sha: str | None  # None: an eval-protocol line, matched on messages alone
    delta: Json | None
    raw: bytes = b""
    kept: Json | None = None
    source: str = ""
    line: int = 0
    env_index: EnvIndex = field(init=False)
    channel: str = field(init=False)
    step: int = field(init=False)
    tail: int = field(default=0, init=False)
    stop: int = field(default=0, init=False)
    base: Entry | None = field(default=None, init=False)
    broken: CassetteFormatError | None = field(default=None, init=False)  # why it cannot be served
    checked: bool = field(default=False, init=False)  # its meta.checksum was verified

    def __post_init__(self, at: Key) -> None:
        self.env_index, self.channel, self.step = at

    @classmethod
    def of(cls, line: Json, source: str = "", lineno: int = 0) -> Entry:
        """The entry of a parsed interaction line."""
        key = (line["env_index"], line.get("channel", "llm"), line["step"])
        return cls(key, line.get("request_sha256"), line.get("delta"), b"", line, source, lineno)

    @property
    def key(self) -> Key:
        return (self.env_index, self.channel, self.step)

    def _error(self, why: str) -> CassetteFormatError:
        return format_error(self.source, self.line, why)

    def _decode(self, data: bytes | memoryview) -> Any:
        try:
            return _loads(data)
        except orjson.JSONDecodeError:
            raise self._error("the line is not valid JSON") from None

    def payload(self) -> Json:
        """The line's response, error and meta (or all of it)."""
        if self.kept is not None:
            return self.kept
        data = b"{" + self.raw[self.tail :] if self.tail else self.raw
        found = self._decode(data)
        return found if isinstance(found, dict) else {}

    def decoded(self) -> Json:
        """The whole line, parsed."""
        line: Json = self.kept if self.kept is not None else self._decode(self.raw)
        return line

    @property
    def request(self) -> Json:
        return cast("Json", self.decoded()["request"])

    @property
    def response(self) -> Json | None:
        return cast("Json | None", self.payload().get("response"))

    @property
    def error(self) -> Json | None:
        return cast("Json | None", self.payload().get("error"))

    @property
    def meta(self) -> Json:
        return cast("Json", self.payload().get("meta") or {})

    def check(self) -> None:
        """Raise :class:`CassetteFormatError` if the line cannot be served."""
        if self.broken is not None:
            raise self.broken
        if not self.checked:
            self._check_body()
            self.checked = True

    def _check_body(self) -> None:
        get = self.payload().get
        response, error, meta = get("response"), get("error"), get("meta", {})
        if not body_ok(response, error, meta):
            raise self._error("malformed interaction")
        if not _matches(response, error, meta.get(CHECKSUM_KEY)):
            raise self._error(
                "the response or error is not what was recorded (meta.checksum does not "
                "match: the line was edited or damaged); restore the file, or re-record "
                "this episode"
            )

    def served(self) -> tuple[Json | None, Json | None]:
        """(response, error), in one decode."""
        stop = self.stop
        if not stop:
            payload = self.payload()
            return payload.get("response"), payload.get("error")
        response = self._decode(memoryview(self.raw)[self.tail + _AFTER : stop])  # (no copy)
        if response is not None and type(response) is not dict:
            raise self._error("malformed interaction")
        return response, None

    def response_json(self) -> bytes | None:
        """The response as the JSON bytes of the line (no decode) where it was checked as
        loaded and is an object (and the line holds no error); else None."""
        start = self.tail + _AFTER
        ok = self.stop and self.raw.startswith(b"{", start)
        return self.raw[start : self.stop] if ok else None

    def param(self, key: str) -> Any:
        """A top-level request value (``model``, ...), along the delta bases; or None."""
        node: Entry | None = self
        while node is not None:
            request = node.request
            if key in request:
                return request[key]
            if not _takes(node.delta, key):
                return None
            node = node.base
        return None

    def full_request(self) -> Json:
        """The request as it was made, rebuilt along the chain of delta bases."""
        if self.broken is not None:
            raise self.broken
        chain, root = self._chain()
        full = root.request if root is not None else {}
        for entry in reversed(chain):
            full = entry.rebuild(full)
        return full

    def _chain(self) -> tuple[list[Entry], Entry | None]:
        """(the delta lines from this one down, the entry of the whole request below them)."""
        chain: list[Entry] = []
        node: Entry | None = self
        while node is not None and node.delta is not None:
            chain.append(node)
            node = node.base
        return chain, node

    def rebuild(self, base_full: Json) -> Json:
        """This entry's full request, given the full request of its delta base."""
        request, delta = self.request, self.delta or {}
        fld = delta.get("field", "messages")
        out = _same_params(base_full, delta.get("same", ()), fld)
        out.update(request)
        out[fld] = decode_messages(
            _messages_of(request, fld),
            int(delta.get("keep", 0)),
            _messages_of(base_full, fld),
            self.base.response if self.base is not None else None,
            self._error,
        )
        return out


def _takes(delta: Json | None, key: str) -> bool:
    same = (delta or {}).get("same", ())
    return same == SAME_ALL or key in same


def _matches(response: Json | None, error: Json | None, want: str | None) -> bool:
    """Whether ``want`` (a ``meta.checksum``, or None) is theirs."""
    try:
        return want is None or checksum(response, error) == want
    except NotJSONError:
        return False


def _same_params(base_full: Json, same: Any, fld: str) -> Json:
    if same == SAME_ALL:
        return {key: value for key, value in base_full.items() if key != fld}
    return {key: base_full[key] for key in same if key in base_full}


def _messages_of(request: Json, fld: str) -> list[Any]:
    value = request.get(fld)
    return value if isinstance(value, list) else []


class Rebuilder:
    """The full requests of a file's entries, in file order (each base's kept until used)."""

    def __init__(self) -> None:
        self._kept: dict[Entry, Json] = {}

    def full(self, entry: Entry) -> Json:
        """The full request of ``entry``; CassetteFormatError (its ``broken``) if none."""
        if entry.broken is not None:
            raise entry.broken
        base = entry.base
        full = entry.request if entry.delta is None or base is None else self._on(base, entry)
        self._kept[entry] = full
        return full

    def _on(self, base: Entry, entry: Entry) -> Json:
        try:
            base_full = self._kept.pop(base, None)
            return entry.rebuild(base.full_request() if base_full is None else base_full)
        except CassetteFormatError as exc:
            entry.broken = exc
            raise


def ep_entry(obj: Json, path: str, line: int) -> Entry:
    """An eval-protocol line as an entry: its last assistant message answers the rest."""
    messages, env, step = obj.get("messages"), obj.get("env_index"), obj.get("step")
    if (
        not isinstance(messages, list)
        or not isinstance(env, (int, str))
        or isinstance(env, bool)
        or type(step) is not int
    ):
        raise format_error(
            path, line, "eval-protocol line needs env_index, an int step and messages"
        )
    last = next((i for i in reversed(range(len(messages))) if _is_assistant(messages[i])), None)
    if last is None:
        raise format_error(path, line, "eval-protocol line has no assistant message to replay")
    return Entry((env, "llm", step), None, None, b"", _ep_kept(messages, last), path, line)


def _ep_kept(messages: list[Any], last: int) -> Json:
    return {
        "request": {"messages": messages[:last]},
        "response": {"choices": [{"index": 0, "message": messages[last]}]},
        "meta": {"source": "eval-protocol"},
    }


def _is_assistant(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "assistant"
