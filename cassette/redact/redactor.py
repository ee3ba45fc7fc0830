"""The Redactor: scrubs a line before it touches disk.

Three rules: the value of a key that names a secret (``api_key``, ``Authorization``,
``db_password``, ``X-Custom-Token``, ...) is replaced whatever it holds; any string (or
dict key) that looks like a credential is replaced where it stands; and the values of a
request's ``headers`` are replaced unless harmless. A recorded stream is also scrubbed
as the text its chunks make together (:mod:`.streams`). A line is first tested as bytes
by cheap gates; only a line that passes one is walked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import CassetteError
from .derive import derived_gates
from .patterns import (
    DEFAULT_KEYS,
    DEFAULT_PATTERNS,
    FINDERS,
    HEADER_KEYS,
    SAFE_HEADERS,
    VALIDATORS,
    Gate,
    default_gates,
    truncated_tail,
)
from .streams import is_token_list, scrub_chunks

__all__ = ["IDENTITY", "REDACTED", "Redactor"]

REDACTED = "[REDACTED]"
_EMPTY = (None, "", REDACTED)
# fields that name or address a line: never scrubbed (request_sha256 is the hash of the
# live request; a secret-looking env_index or channel is refused before the live call)
IDENTITY = frozenset(
    {"type", "format", "version", "created_at", "producer", "env_index", "channel", "step"}
    | {"delta", "request_sha256"}
)
_KEY_CACHE = 4096
_LONG = 200  # a text this long is gated (as its JSON bytes) before the patterns run


# ASCII letters only, as the gates lower a line's bytes (str.lower() reads the Kelvin sign
# as "k": a key the gates could not see)
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ-", "abcdefghijklmnopqrstuvwxyz_")


def _norm_key(key: str) -> str:
    return key.translate(_ASCII_LOWER)


def _body(word: str) -> str:
    return "".join("[_-]" if ch == "_" else re.escape(ch) for ch in word)


def _key_looks(keys: Iterable[str], suffixes: Iterable[str]) -> bytes | None:
    """A regex to match at the ``:`` of ``"key":`` if the key may name a secret: it looks
    back at the last (up to) five bytes of the key (lowered; ``_`` or ``-``), after a look
    at the last two (where most keys of a line fail, at once)."""
    words = [('"' + k) if len(k) < 5 else k[-5:] for k in keys] + [s[-5:] for s in suffixes]
    by_width: dict[int, set[str]] = {}
    for word in words:
        by_width.setdefault(len(word), set()).add(_body(word))
    if not by_width:
        return None
    looks = "|".join(
        "(?<=(?:" + "|".join(sorted(alts)) + ')":)' for _, alts in sorted(by_width.items())
    )
    ends = sorted({_body(w[-2:]) for w in words})
    first = "(?<=(?:" + "|".join(ends) + ')":)' if min(map(len, words)) >= 2 else ""
    return (first + "(?:" + looks + ")").encode()


def _safe_header(name: str) -> bool:
    low = name.lower()
    return any(low.startswith(s[:-1]) if s.endswith("*") else low == s for s in SAFE_HEADERS)


@dataclass(frozen=True)
class Redactor:
    """What to scrub. ``Redactor(extra_keys=["session_id"], extra_patterns=[r"tok_\\w+"])``.

    ``keys``/``patterns`` replace the defaults; ``extra_*`` add to them. A key ``"*_x"``
    matches every key ending in ``_x`` or ``-x``; a pattern may mark the part to replace
    with a group named ``secret`` (else the whole match is replaced).
    """

    keys: Iterable[str] = DEFAULT_KEYS
    patterns: Iterable[str] = DEFAULT_PATTERNS
    extra_keys: Iterable[str] = ()
    extra_patterns: Iterable[str] = ()
    replacement: str = REDACTED
    _keys: frozenset[str] = field(init=False, repr=False)
    _suffixes: tuple[str, ...] = field(init=False, repr=False)
    # per pattern: its finder (a compiled regex, or a faster twin), its secret group, and
    # a check of what it found
    _finders: tuple[tuple[Any, str | None, Callable[[str], bool] | None], ...] = field(
        init=False, repr=False
    )
    _gates: tuple[Gate, ...] = field(init=False, repr=False)
    # the gates, sorted for hits(): (byte, search) of those led by a one-byte search, then
    # the searches of the others, on the raw bytes and on the fold() copy; then the rest
    # (search, byte, needles, what it reads: 0 raw, 1 fold() copy, 2 lowered)
    _rare: tuple[tuple[tuple[bytes, Any], ...], tuple[tuple[bytes, Any], ...]] = field(
        init=False, repr=False
    )
    _scans: tuple[tuple[Any, ...], tuple[Any, ...]] = field(init=False, repr=False)
    _plan: tuple[tuple[Any, bytes, tuple[bytes, ...], int], ...] = field(init=False, repr=False)
    _key_cache: dict[str, bool] = field(init=False, repr=False)
    _checked: set[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = [_norm_key(k) for k in (*self.keys, *self.extra_keys) if k]
        keys = frozenset(k for k in names if not k.startswith("*"))
        suffixes = tuple(sorted({k[1:] for k in names if k.startswith("*") and len(k) > 1}))
        base = [p for p in self.patterns if p]  # (each iterable is read once)
        extra = [p for p in self.extra_patterns if p]
        pats = base + extra
        finders = tuple(
            (
                FINDERS.get(p) or re.compile(p),
                "secret" if "(?P<secret>" in p else None,
                VALIDATORS.get(p),
            )
            for p in pats
        )
        defaults = base == list(DEFAULT_PATTERNS)
        looks = _key_looks(sorted(keys), suffixes)
        if defaults:  # the key scan joins the gates' scan for ":"
            gates = [*default_gates(looks), *derived_gates(extra)]
        else:
            gates = derived_gates(pats)
            if looks is not None:
                gates.insert(0, Gate(re.compile(b":" + looks), b":", folded=True, dashed=True))
        object.__setattr__(self, "_keys", keys)
        object.__setattr__(self, "_suffixes", suffixes)
        object.__setattr__(self, "_finders", finders)
        object.__setattr__(self, "_gates", tuple(gates))
        rare: tuple[list[tuple[bytes, Any]], list[tuple[bytes, Any]]] = ([], [])
        scans: tuple[list[Any], list[Any]] = ([], [])
        rest = []
        for g in gates:
            if g.scan is None or g.needles or g.folded != g.dashed:
                rest.append(g)
            elif g.byte:
                rare[g.folded].append((g.byte, g.scan.search))
            else:
                scans[g.folded].append(g.scan.search)
        plan = tuple(
            (g.scan and g.scan.search, g.byte, g.needles, (2 - g.dashed) if g.folded else 0)
            for g in rest
        )
        object.__setattr__(self, "_rare", (tuple(rare[0]), tuple(rare[1])))
        object.__setattr__(self, "_scans", (tuple(scans[0]), tuple(scans[1])))
        object.__setattr__(self, "_plan", plan)
        object.__setattr__(self, "_key_cache", {})
        object.__setattr__(self, "_checked", set())

    # --- tests ------------------------------------------------------------------------

    def hits(self, raw: bytes) -> bool:
        """Whether the JSON bytes may hold something to scrub (a fast, loose test)."""
        folded = raw.lower().replace(b"-", b"_")  # fold(raw), inlined: hits() is hot
        rare_raw, rare_folded = self._rare
        for byte, search in rare_raw:  # Gate.test, inlined
            if byte in raw and search(raw) is not None:
                return True
        for byte, search in rare_folded:
            if byte in folded and search(folded) is not None:
                return True
        scans_raw, scans_folded = self._scans
        for search in scans_raw:
            if search(raw) is not None:
                return True
        for search in scans_folded:
            if search(folded) is not None:
                return True
        if self._plan:
            return self._rest(raw, folded)
        return False

    def _rest(self, raw: bytes, folded: bytes) -> bool:
        lowered = None
        for search, byte, needles, kind in self._plan:
            if kind == 0:
                data = raw
            elif kind == 1:
                data = folded
            else:
                data = lowered = raw.lower() if lowered is None else lowered
            if byte and byte not in data:
                continue
            if needles and not any(n in data for n in needles):
                continue
            if search is None or search(data) is not None:
                return True
        return False

    def is_secret_key(self, key: str) -> bool:
        """Whether the value of ``key`` is replaced whatever it holds."""
        hit = self._key_cache.get(key)
        if hit is None:
            norm = _norm_key(key)
            hit = norm in self._keys or (bool(self._suffixes) and norm.endswith(self._suffixes))
            if len(self._key_cache) < _KEY_CACHE:
                self._key_cache[key] = hit
        return hit

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) of every secret in ``text``, in order; overlapping finds of
        several patterns (``Bearer sk-...``) are merged into one."""
        if not self._finders:
            return []
        if len(text) >= _LONG and not self.hits(orjson.dumps(text)):
            return []  # the gates are far cheaper than the patterns on a long text
        found = []
        for finder, secret, valid in self._finders:
            for m in finder.finditer(text):
                start, end = m.span(secret) if secret and m.group(secret) is not None else m.span()
                if start == end or text[start:end] == self.replacement:
                    continue
                if valid is not None and not valid(text[start:end]):
                    continue
                found.append((start, end))
        if len(found) < 2:
            return found
        found.sort()
        merged = [found[0]]
        for start, end in found[1:]:
            if start < merged[-1][1]:
                if end > merged[-1][1]:
                    merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        return merged

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
        if len(self._checked) < _KEY_CACHE:  # a clean id costs one lookup from now on
            self._checked.add(value)

    # --- scrubbing --------------------------------------------------------------------

    def redact(self, value: Any) -> tuple[Any, int]:
        """Return (scrubbed copy, number of replacements); unchanged parts are shared."""
        return self._walk(value)

    def redact_text(self, text: str) -> tuple[str, int]:
        found = self.spans(text)
        if not found:
            return text, 0
        parts = []
        pos = 0
        for start, end in found:
            parts.append(text[pos:start])
            parts.append(self.replacement)
            pos = end
        parts.append(text[pos:])
        return "".join(parts), len(found)

    def redact_line(
        self, line: dict[str, Any], raw: bytes, dumps: Callable[[Any], bytes]
    ) -> tuple[dict[str, Any], int]:
        """(a line fit to write, replacements made): ``raw`` is ``dumps(line)``. Streamed
        chunks and request headers are scrubbed first; then, if the bytes pass a gate,
        the line is walked (its identity fields left alone)."""
        out, count = self._prepare(line)
        if count:
            raw = dumps(out)
        if not self.hits(raw):
            return out, count
        body = {k: v for k, v in out.items() if k not in IDENTITY}
        clean, n = self._walk(body)
        if n:
            out = {k: clean.get(k, v) if k not in IDENTITY else v for k, v in out.items()}
        return out, count + n

    def _prepare(self, line: dict[str, Any]) -> tuple[dict[str, Any], int]:
        count = 0
        response = line.get("response")
        if isinstance(response, dict) and isinstance(response.get("chunks"), list):
            meta = line.get("meta")
            cut = line.get("error") is not None or (
                isinstance(meta, dict) and meta.get("incomplete")
            )
            chunks, n = scrub_chunks(
                response["chunks"], self.spans, self.replacement, truncated_tail if cut else None
            )
            if n:
                line = {**line, "response": {**response, "chunks": chunks}}
                count += n
        request = line.get("request")
        if isinstance(request, dict) and not HEADER_KEYS.isdisjoint(request):
            headers = {}
            for name in HEADER_KEYS & request.keys():
                given = request[name]
                if not isinstance(given, dict):
                    continue
                kept = {
                    k: v if v in _EMPTY or (isinstance(k, str) and _safe_header(k)) else None
                    for k, v in given.items()
                }
                n = sum(1 for v in kept.values() if v is None)
                if n:
                    headers[name] = {
                        k: self.replacement if kept[k] is None else v for k, v in given.items()
                    }
                    count += n
            if headers:
                line = {**line, "request": {**request, **headers}}
        return line, count

    def _walk(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            total = 0
            out: dict[Any, Any] = {}
            for k, v in value.items():
                key = k
                if isinstance(k, str):
                    key, n = self.redact_text(k)
                    if n:  # a secret used as a key: keep the keys distinct
                        total += n
                        while key in out or (key != k and key in value):
                            key += "'"
                    if self.is_secret_key(k) and v not in _EMPTY:
                        out[key] = self.replacement
                        total += 1
                        continue
                nv, n = self._walk(v)
                out[key] = nv
                total += n
            if total and type(out.get("token")) is str and isinstance(out.get("bytes"), list):
                out["bytes"] = list(out["token"].encode())  # a logprob's bytes spell its token
            return (out, total) if total else (value, 0)
        if isinstance(value, (list, tuple)):
            total = 0
            if isinstance(value, list) and is_token_list(value):  # logprobs: a secret may
                value, total = scrub_chunks(value, self.spans, self.replacement)  # span tokens
            items = []
            for v in value:
                nv, n = self._walk(v)
                items.append(nv)
                total += n
            return (items, total) if total else (value, 0)
        return value, 0
