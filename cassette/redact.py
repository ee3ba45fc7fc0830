"""Secret scrubbing, applied to every line before it touches disk.

Two rules: the value of a key that names a secret (``api_key``, ``Authorization``, ...)
is replaced whatever it holds, and any string that looks like a credential (bearer
tokens, provider keys such as ``sk-...``) is replaced wherever it stands. A line is
first scanned as bytes in one regex pass; only a line that hits is walked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_KEYS", "DEFAULT_PATTERNS", "REDACTED", "Redactor"]

REDACTED = "[REDACTED]"
_EMPTY = (None, "", REDACTED)

DEFAULT_KEYS: tuple[str, ...] = (
    "api_key",
    "apikey",
    "x_api_key",
    "api_token",
    "authorization",
    "proxy_authorization",
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "secret_key",
    "aws_secret_access_key",
    "password",
    "passwd",
    "cookie",
    "set_cookie",
    "x_goog_api_key",
)

DEFAULT_PATTERNS: tuple[str, ...] = (
    r"\bsk-(?:proj-|ant-|or-)?[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic, OpenRouter
    r"(?i:\bbearer\s+)[A-Za-z0-9._~+/=\-]{12,}",
    r"\bAKIA[0-9A-Z]{16}\b",  # AWS access key id
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"\bgithub_pat_[A-Za-z0-9_]{40,}",
    r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bfw_[A-Za-z0-9]{20,}",  # Fireworks
    r"\bgsk_[A-Za-z0-9]{20,}",  # Groq
    r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+",  # JWT
)


def _prefilter(pattern: str) -> re.Pattern[bytes]:
    """A looser, faster form of ``pattern`` for the byte scan: without a leading word
    boundary, so the engine can jump to the pattern's literal prefix."""
    flags = 0
    if pattern.startswith("(?i:"):
        flags = re.IGNORECASE
        pattern = "(?:" + pattern[4:]
    pattern = pattern.replace("(?:\\b", "(?:", 1) if pattern.startswith("(?:\\b") else pattern
    return re.compile(pattern.removeprefix("\\b").encode(), flags)


def _anchored(scan: re.Pattern[bytes]) -> tuple[bytes, bool, re.Pattern[bytes]]:
    """(a literal every match contains, whether to look in lowered bytes, the regex): the
    literal is checked with a plain substring search first, which is far cheaper."""
    folded = bool(scan.flags & re.IGNORECASE)
    source = scan.pattern
    if source.startswith(b"(?:") and _closing(source, 0) == len(source) - 1:
        source = source[3:-1]  # one group around it all
    elif source.startswith(b"(?:"):
        source = source[3:]  # a leading group: its own first literal still leads
    depth = 0
    for i, ch in enumerate(source):  # a top-level alternative has no common literal
        depth += ch == ord("(") and (i == 0 or source[i - 1] != ord("\\"))
        depth -= ch == ord(")") and (i == 0 or source[i - 1] != ord("\\"))
        if ch == ord("|") and depth <= 0 and (i == 0 or source[i - 1] != ord("\\")):
            return b"", folded, scan
    literal = re.match(rb"[A-Za-z0-9_-]*", source)
    text = literal.group(0) if literal else b""
    if source[len(text) : len(text) + 1] in (b"?", b"*", b"{"):
        text = text[:-1]  # the last character may be absent
    return (text.lower() if folded else text), folded, scan


# Letters seldom seen in prose and JSON, rarest first: a one-byte search (memchr) for the
# rarest letter of an anchor rules most lines out before the regex runs.
_RARE = b"QZJXKVWYUqzjx"


def _rare(anchor: bytes) -> bytes:
    return next((bytes([c]) for c in _RARE if c in anchor), b"")


def _separator_gate(sep: bytes, anchors: list[bytes]) -> re.Pattern[bytes]:
    """A regex that finds ``sep`` where it ends one of ``anchors`` (e.g. the ``_`` of
    ``hf_`` or ``gsk_``): led by a literal, it jumps from separator to separator and looks
    back at the (up to) three bytes before each."""
    looks = []
    for anchor in anchors:
        body = anchor[:-1][-3:]
        looks.append(b"." * (3 - len(body)) + re.escape(body))
    return re.compile(re.escape(sep) + b"(?<=(?:" + b"|".join(looks) + b")" + re.escape(sep) + b")")


def _trie(words: list[str]) -> str:
    """One regex for ``words`` with shared prefixes factored out (far fewer branches to
    try at each quote of a line than a flat alternation); ``_`` matches ``_`` or ``-``."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alts = [
            ("[_-]" if ch == "_" else re.escape(ch)) + emit(node[ch]) if ch else "" for ch in node
        ]
        ends = "" in alts
        alts = [alt for alt in alts if alt]
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return ("(?:" + body + ")?" if alts else "") if ends else body

    return emit(root)


def _closing(source: bytes, start: int) -> int:
    """Index of the parenthesis that closes the one at ``start``."""
    depth = 0
    for i in range(start, len(source)):
        if source[i] == ord("(") and (i == 0 or source[i - 1] != ord("\\")):
            depth += 1
        elif source[i] == ord(")") and source[i - 1] != ord("\\"):
            depth -= 1
            if depth == 0:
                return i
    return -1


def _norm_key(key: str) -> str:
    return key.lower().replace("-", "_")


@dataclass(frozen=True)
class Redactor:
    """What to scrub. ``Redactor(extra_keys=["session_id"], extra_patterns=[r"tok_\\w+"])``.

    ``keys``/``patterns`` replace the defaults; ``extra_*`` add to them.
    """

    keys: Iterable[str] = DEFAULT_KEYS
    patterns: Iterable[str] = DEFAULT_PATTERNS
    extra_keys: Iterable[str] = ()
    extra_patterns: Iterable[str] = ()
    replacement: str = REDACTED
    _keys: frozenset[str] = field(init=False, repr=False)
    _text: re.Pattern[str] | None = field(init=False, repr=False)
    # (anchor literal, its rarest letter, case-folded?, regex) a pattern
    _scans: tuple[tuple[bytes, bytes, bool, re.Pattern[bytes]], ...] = field(init=False, repr=False)
    _key_scan: re.Pattern[bytes] | None = field(init=False, repr=False)
    # patterns whose anchors end in the same separator: one regex finds a separator led by
    # any of their anchors, and only then does each pattern's own regex run
    _groups: tuple[tuple[re.Pattern[bytes], tuple[re.Pattern[bytes], ...]], ...] = field(
        init=False, repr=False
    )

    def __post_init__(self) -> None:
        keys = frozenset(_norm_key(k) for k in (*self.keys, *self.extra_keys))
        pats = [p for p in (*self.patterns, *self.extra_patterns) if p]
        text = re.compile("|".join(f"(?:{p})" for p in pats)) if pats else None
        # the byte scan is a prefilter (the walk applies the exact patterns): one regex a
        # pattern, each led by a literal the engine can jump to; keys on the lowered bytes
        scans = tuple(
            (anchor, _rare(anchor), folded, scan)
            for anchor, folded, scan in (_anchored(_prefilter(p)) for p in pats)
        )
        key_scan = re.compile(f'"(?:{_trie(sorted(keys))})":'.encode()) if keys else None
        grouped: dict[bytes, list[tuple[bytes, re.Pattern[bytes]]]] = {}
        for anchor, _, folded, scan in scans:
            if not folded and len(anchor) >= 2 and anchor[-1:] in (b"_", b"-"):
                grouped.setdefault(anchor[-1:], []).append((anchor, scan))
        groups = tuple(
            (_separator_gate(sep, [a for a, _ in members]), tuple(s for _, s in members))
            for sep, members in grouped.items()
            if len(members) >= 2
        )
        in_group = {id(s) for _, members in groups for s in members}
        object.__setattr__(self, "_keys", keys)
        object.__setattr__(self, "_text", text)
        object.__setattr__(self, "_scans", tuple(x for x in scans if id(x[3]) not in in_group))
        object.__setattr__(self, "_key_scan", key_scan)
        object.__setattr__(self, "_groups", groups)

    def hits(self, raw: bytes) -> bool:
        """Whether the JSON bytes may hold something to scrub (a fast, loose scan)."""
        lowered = raw.lower()
        if self._key_scan is not None and self._key_scan.search(lowered) is not None:
            return True
        for anchor, rare, folded, scan in self._scans:
            if folded:  # a plain substring test first: case-folding regexes are slow
                if anchor in lowered and scan.search(lowered) is not None:
                    return True
            elif rare in raw and scan.search(raw) is not None:  # (it jumps to the anchor)
                return True
        for gate, members in self._groups:
            if gate.search(raw) is not None and any(m.search(raw) for m in members):
                return True
        return False

    def redact(self, value: Any) -> tuple[Any, int]:
        """Return (scrubbed copy, number of replacements); unchanged parts are shared."""
        return self._walk(value)

    def redact_text(self, text: str) -> tuple[str, int]:
        if self._text is None:
            return text, 0
        return self._text.subn(self.replacement, text)

    def _walk(self, value: Any) -> tuple[Any, int]:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            total = 0
            out: dict[Any, Any] = {}
            for k, v in value.items():
                if isinstance(k, str) and _norm_key(k) in self._keys and v not in _EMPTY:
                    out[k] = self.replacement
                    total += 1
                    continue
                nv, n = self._walk(v)
                out[k] = nv
                total += n
            return (out, total) if total else (value, 0)
        if isinstance(value, (list, tuple)):
            total = 0
            items = []
            for v in value:
                nv, n = self._walk(v)
                items.append(nv)
                total += n
            return (items, total) if total else (value, 0)
        return value, 0
