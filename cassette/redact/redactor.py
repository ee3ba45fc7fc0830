"""The Redactor: scrubs a line before it touches disk. The value of a key that names a
secret is replaced whatever it holds, any string (or dict key) a pattern matches is
replaced where it stands, request headers unless harmless, and a stream as the text its
chunks make together (:mod:`.streams`). The default patterns run only on a line that
passes a gate of :mod:`.gates`, a user's on every string; then the user's hook sees it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import CassetteError
from .gates import Gates, Scans, line_gates
from .patterns import (
    DEFAULT_KEYS,
    DEFAULT_PATTERNS,
    HEADER_KEYS,
    SAFE_HEADERS,
    Check,
    Rule,
    assigned,
    compile_rule,
    is_told_value,
    is_value,
    keyword,
    told,
    truncated_tail,
    user_keyword,
)
from .streams import is_token_list, respell, scrub_chunks

__all__ = ["IDENTITY", "REDACTED", "Redactor"]

REDACTED = "[REDACTED]"
_EMPTY = (None, "", REDACTED)
# fields that name or address a line: never scrubbed (request_sha256 is the hash of the
# live request; a secret-looking env_index or channel is refused before the live call)
IDENTITY = frozenset(
    {"type", "format", "version", "created_at", "producer", "env_index", "channel", "step"}
    | {"delta", "request_sha256"}
)
_CACHE = 4096  # ids found clean, remembered
_BLOB = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{512,}")  # base64 data
_BLOBS = 4096  # a text this long is searched by the default patterns around its blobs
_LONG = 200  # a text this long is gated (as its JSON bytes) before the default patterns run
# ASCII letters only, as the gates lower bytes (str.lower() reads the Kelvin sign as "k")
_ASCII = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

Hook = Callable[[dict[str, Any]], "dict[str, Any] | None"]
Span = tuple[int, int]


def _fold(key: str) -> str:
    """A key name as names are compared: lowered (ASCII only), ``-`` read as ``_``."""
    return (key.lower() if key.isascii() else key.translate(_ASCII)).replace("-", "_")


def _strings(value: Any, out: list[Any]) -> list[str]:
    """``out`` with every string under ``value`` (dict keys too) added."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        out.extend(value)  # (a line's keys are str: the format refuses others)
        for v in value.values():
            _strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out)
    return out


def _key_names(keys: Iterable[str]) -> tuple[list[str], frozenset[str], tuple[str, ...]]:
    """(every name, folded; the names of whole keys; the suffixes named by ``*_x``)."""
    names = [_fold(k) for k in keys if k.strip("*")]
    starred = {k for k in names if k[0] == "*"}
    return names, frozenset(names) - starred, tuple(sorted(k[1:] for k in starred))


def _merge(found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``found`` in order, overlapping spans merged into one."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _between_blobs(text: str) -> list[tuple[int, int]]:
    """The parts of a long ``text`` around its runs of base64 (images, data URLs), where no
    default pattern can match and which the keyword patterns would crawl through."""
    if len(text) <= _BLOBS:
        return [(0, len(text))]
    parts, pos = [], 0
    for m in _BLOB.finditer(text):
        parts.append((pos, m.start()))
        pos = m.end()
    parts.append((pos, len(text)))
    return parts


def _rules(patterns: Iterable[str], words: Iterable[str]) -> tuple[Rule, ...]:
    """The compiled ``patterns``, and the rules of a user's keywords ``words`` (plain
    text: ``"pin"``): a value assigned to a name ending with one, or told after one."""
    rules = tuple(map(compile_rule, filter(None, patterns)))
    kws = [user_keyword(w) for w in words if w.strip()]
    if not kws:
        return rules
    kw = keyword(kws)
    return (*rules, compile_rule(assigned(kw), is_value), compile_rule(told(kw), is_told_value))


def _allowances(allow: Iterable[str | re.Pattern[str]]) -> tuple[frozenset[str], tuple[Any, ...]]:
    """(the allowed strings, the allowed regexes)."""
    given = [*allow]
    return frozenset(a for a in given if isinstance(a, str)), tuple(
        a for a in given if isinstance(a, re.Pattern)
    )


def _added(given: Iterable[str], extra: Iterable[str], defaults: tuple[str, ...]) -> list[str]:
    return [x for x in (*given, *extra) if x not in defaults]


def _safe_header(name: str) -> bool:
    low = name.lower()  # (a line's keys are str: it was dumped before it is redacted)
    return any(low.startswith(s[:-1]) if s.endswith("*") else low == s for s in SAFE_HEADERS)


def _cut_short(line: dict[str, Any]) -> bool:
    """Whether a line's stream was cut short: it failed, or was closed early."""
    meta = line.get("meta")
    incomplete = isinstance(meta, dict) and bool(meta.get("incomplete"))
    return incomplete or line.get("error") is not None


def _hidden_headers(given: Any) -> list[str]:
    """The names of the headers ``given`` whose values are replaced."""
    if not isinstance(given, dict):
        return []
    return [k for k, v in given.items() if v not in _EMPTY and not _safe_header(k)]


@dataclass(frozen=True)
class Redactor:
    """What to scrub. ``Redactor(extra_keys=["session_id"], extra_patterns=[r"tok_\\w+"])``.

    ``keys``/``patterns`` replace the defaults; ``extra_*`` add to them. A key ``"*_x"``
    matches every key ending in ``_x`` or ``-x``; a pattern may mark the part to replace
    with a group named ``secret`` (else the whole match is replaced). ``extra_keywords``
    (plain words, ``"pin"``) are credential keywords like ``password``: a value after one
    (``pin=4711``, ``"pin": "..."``, ``my pin is 4711x``) is replaced if it looks like a
    secret. ``allow``: values never replaced (a str, whole; a compiled regex, fullmatch),
    what a pattern or a secret key would take for a secret. ``hook(line)`` sees
    every line about to be written, already scrubbed, and returns None to keep it or a
    new dict to write instead (counted as one replacement; the fields in ``IDENTITY``
    keep their values); it must not change the line it is given.
    """

    keys: Iterable[str] = DEFAULT_KEYS
    patterns: Iterable[str] = DEFAULT_PATTERNS
    extra_keys: Iterable[str] = ()
    extra_patterns: Iterable[str] = ()
    extra_keywords: Iterable[str] = ()
    allow: Iterable[str | re.Pattern[str]] = ()
    replacement: str = REDACTED
    hook: Hook | None = None
    _keys: frozenset[str] = field(init=False, repr=False)
    _suffixes: tuple[str, ...] = field(init=False, repr=False)
    _rules: tuple[Rule, ...] = field(init=False, repr=False)  # every pattern
    _ungated: tuple[Rule, ...] = field(init=False, repr=False)  # the user's patterns
    _raw: Gates = field(init=False, repr=False)  # the line gates, on the bytes as they are
    _folded: Scans = field(init=False, repr=False)  # and on their folded copy
    _checked: set[str] = field(init=False, repr=False)
    _allowed: frozenset[str] = field(init=False, repr=False)
    _allowed_re: tuple[re.Pattern[str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("keys", "patterns", "extra_keys", "extra_patterns", "extra_keywords", "allow"):
            object.__setattr__(self, name, tuple(getattr(self, name)))  # (read more than once)
        names, keys, suffixes = _key_names((*self.keys, *self.extra_keys))
        rules = _rules((*self.patterns, *self.extra_patterns), self.extra_keywords)
        raw, folded = line_gates(names, any(rule.gated for rule in rules))
        allowed, allowed_re = _allowances(self.allow)
        ungated = tuple(rule for rule in rules if not rule.gated)
        for name, value in (
            ("_keys", keys), ("_suffixes", suffixes), ("_rules", rules), ("_ungated", ungated),
            ("_raw", raw), ("_folded", folded), ("_checked", set()), ("_allowed", allowed),
            ("_allowed_re", allowed_re),
        ):  # fmt: skip
            object.__setattr__(self, name, value)

    def described(self) -> dict[str, Any]:
        """What a user changed, as the header's ``meta.redact`` records it: their keys,
        patterns and keywords, how many values they allow, a hook, the defaults dropped."""
        given = {"keys": (self.keys, DEFAULT_KEYS), "patterns": (self.patterns, DEFAULT_PATTERNS)}
        told = {
            "keys": _added(self.keys, self.extra_keys, DEFAULT_KEYS),
            "patterns": _added(self.patterns, self.extra_patterns, DEFAULT_PATTERNS),
            "keywords": list(self.extra_keywords),
            "allowed": len(self._allowed) + len(self._allowed_re),
            "hook": self.hook is not None,
            "dropped": [name for name, (mine, dflt) in given.items() if not {*dflt} <= {*mine}],
        }
        return {k: v for k, v in told.items() if v}

    def allowed(self, value: str) -> bool:
        """Whether ``value`` was marked as no secret (``allow``)."""
        return value in self._allowed or any(a.fullmatch(value) for a in self._allowed_re)

    # --- tests ------------------------------------------------------------------------

    def hits(self, raw: bytes) -> bool:
        """Whether the JSON bytes may hold a secret key or a default pattern's match (a
        fast, loose test; the user's patterns are not part of it)."""
        for byte, search in self._raw:
            if byte in raw and search(raw) is not None:
                return True
        folded = raw.lower().replace(b"-", b"_")
        for search in self._folded:  # noqa: SIM110 (a loop is cheaper than any())
            if search(folded) is not None:
                return True
        return False

    def is_secret_key(self, key: Any) -> bool:
        """Whether the value of ``key`` is replaced whatever it holds."""
        norm = _fold(key) if isinstance(key, str) else ""
        return norm in self._keys or norm.endswith(self._suffixes)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) of every secret in ``text``, in order; overlapping finds of
        several patterns (``Bearer sk-...``) are merged into one."""
        rules = self._ungated
        if len(text) < _LONG or self.hits(orjson.dumps(text)):
            rules = self._rules  # (the gates are far cheaper than the patterns)
        parts = _between_blobs(text)
        found = [span for rule in rules for span in self._finds(rule, text, parts)]
        return _merge(found) if len(found) > 1 else found

    def _finds(self, rule: Rule, text: str, parts: list[tuple[int, int]]) -> Iterator[Span]:
        """The finds of ``rule`` in ``text`` (a default pattern's: in ``parts`` of it)."""
        find, group, check, gated = rule
        for part in parts if gated else [(0, len(text))]:
            for m in find.finditer(text, *part):
                start, end = m.span(group) if group and m.group(group) is not None else m.span()
                if self._kept(text[start:end], check, text[max(0, start - 2) : start]):
                    yield start, end

    def _kept(self, secret: str, check: Check | None, before: str) -> bool:
        """Whether a find is replaced: not empty, replaced or allowed already, and passing
        its rule's check (``before``: the two characters before it)."""
        if not secret or secret == self.replacement or self.allowed(secret):
            return False
        return check is None or check(secret, before)

    def check_key(self, what: str, value: Any) -> None:
        """Refuse an ``env_index`` or ``channel`` that looks like a secret: it is written as
        a key, and scrubbing it would make replay miss."""
        if not isinstance(value, str) or value in self._checked:
            return
        if self.spans(value):
            raise CassetteError(
                f"the {what} (a str of {len(value)} characters) looks like a secret; it is "
                f"part of the key, written as it is, so it cannot be scrubbed: use another {what}"
            )
        if len(self._checked) < _CACHE:  # a clean id costs one lookup from now on
            self._checked.add(value)

    # --- scrubbing --------------------------------------------------------------------

    def redact(self, value: Any) -> tuple[Any, int]:
        """Return (scrubbed copy, number of replacements); unchanged parts are shared."""
        return self._walk(value)

    def redact_text(self, text: str) -> tuple[str, int]:
        found = self.spans(text)
        if not found:
            return text, 0
        parts: list[str] = []
        pos = 0
        for start, end in found:
            parts += (text[pos:start], self.replacement)
            pos = end
        parts.append(text[pos:])
        return "".join(parts), len(found)

    def redact_line(
        self, line: dict[str, Any], raw: bytes, dumps: Callable[[Any], bytes]
    ) -> tuple[dict[str, Any], int]:
        """(a line fit to write, replacements made): ``raw`` is ``dumps(line)``. Streamed
        chunks and request headers are scrubbed first; then the line is walked (its
        identity fields left alone) if it passes a gate or a user's pattern finds
        something in one of its strings; then the hook sees it."""
        out, count = self._chunks(line)
        out, n = self._headers(out)
        count += n
        if self.hits(dumps(out) if count else raw) or (self._ungated and self._user_hits(out)):
            out, n = self._walk_line(out)
            count += n
        return self._hooked(out, count)

    def _user_hits(self, line: dict[str, Any]) -> bool:
        """Whether a user's pattern finds something in a string of the line."""
        texts = _strings(line, [])
        for rule in self._ungated:
            search = rule.find.search
            for text in texts:
                if search(text) is not None:
                    return True
        return False

    def _walk_line(self, line: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The line walked, its identity fields left alone."""
        body = {k: v for k, v in line.items() if k not in IDENTITY}
        clean, n = self._walk(body)
        if not n:
            return line, 0
        walked = iter(clean.items())  # (in the order of the line's keys)
        return dict((k, v) if k in IDENTITY else next(walked) for k, v in line.items()), n

    def _hooked(self, line: dict[str, Any], count: int) -> tuple[dict[str, Any], int]:
        new = self.hook(line) if self.hook is not None else None
        if new is None:
            return line, count
        return {**new, **{k: line[k] for k in IDENTITY if k in line}}, count + 1

    def _chunks(self, line: dict[str, Any]) -> tuple[Any, int]:
        """A streamed response's chunks, scrubbed as the texts they make together (a
        stream cut short also loses a secret's start at its end)."""
        response = line.get("response")
        if not isinstance(response, dict) or not isinstance(response.get("chunks"), list):
            return line, 0
        tail = truncated_tail if _cut_short(line) else None
        chunks, n = scrub_chunks(response["chunks"], self.spans, self.replacement, tail)
        return ({**line, "response": {**response, "chunks": chunks}}, n) if n else (line, 0)

    def _headers(self, line: dict[str, Any]) -> tuple[Any, int]:
        """Every value of a request's headers replaced, unless harmless or empty."""
        request = line.get("request")
        if not isinstance(request, dict) or HEADER_KEYS.isdisjoint(request):
            return line, 0
        count = 0
        headers = {}
        for name in HEADER_KEYS & request.keys():
            hide = _hidden_headers(request[name])
            if hide:
                headers[name] = {**request[name], **dict.fromkeys(hide, self.replacement)}
                count += len(hide)
        return ({**line, "request": {**request, **headers}}, count) if count else (line, 0)

    def _walk(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            return self._walk_dict(value)
        if isinstance(value, (list, tuple)):
            return self._walk_list(value)
        return value, 0

    def _walk_list(self, value: list[Any] | tuple[Any, ...]) -> tuple[Any, int]:
        total = 0
        if isinstance(value, list) and is_token_list(value):  # logprobs: a secret may span
            value, total = scrub_chunks(value, self.spans, self.replacement)  # tokens
        items = []
        for v in value:
            nv, n = self._walk(v)
            items.append(nv)
            total += n
        return (items, total) if total else (value, 0)

    def _walk_dict(self, value: dict[Any, Any]) -> tuple[Any, int]:
        total = 0
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key, n = self._key(k, value, out)
            out[key], m = (self.replacement, 1) if self._secret_value(k, v) else self._walk(v)
            total += n + m
        if total:
            respell(out)
        return (out, total) if total else (value, 0)

    def _secret_value(self, key: Any, value: Any) -> bool:
        """Whether ``value`` is replaced whole, as the value of the secret ``key``."""
        if value in _EMPTY or not self.is_secret_key(key):
            return False
        return not (isinstance(value, str) and self.allowed(value))

    def _key(self, k: Any, value: dict[Any, Any], out: dict[Any, Any]) -> Any:
        """(``k`` scrubbed, secrets in it), a new key kept distinct from the others."""
        key, n = self.redact_text(k) if isinstance(k, str) else (k, 0)
        while n and (key in out or (key != k and key in value)):
            key += "'"
        return key, n
