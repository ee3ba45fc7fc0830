"""Gates for user patterns (``Redactor(extra_patterns=...)``): each pattern's bytes form,
looser and led by a literal the regex engine can jump to (see :mod:`.patterns` for the
hand-written gates of the defaults)."""

from __future__ import annotations

import re

from .patterns import Gate

__all__ = ["derived_gates"]

_LEAD = "(?<![A-Za-z0-9])"


def _prefilter(pattern: str) -> re.Pattern[bytes]:
    """A looser, faster form of ``pattern`` for the byte scan: without a leading word
    boundary, so the engine can jump to the pattern's literal prefix."""
    flags = 0
    if pattern.startswith("(?i:"):
        flags = re.IGNORECASE
        pattern = "(?:" + pattern[4:]
    pattern = pattern.replace("(?:\\b", "(?:", 1) if pattern.startswith("(?:\\b") else pattern
    if pattern.startswith("(?:" + _LEAD):
        pattern = "(?:" + pattern[3 + len(_LEAD) :]
    pattern = pattern.removeprefix(_LEAD)
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


def derived_gates(patterns: list[str]) -> list[Gate]:
    """One gate a pattern, led by the rarest letter of its literal; patterns whose literal
    ends in the same separator (``_``, ``-``) share one gate (one regex for them all)."""
    found = [_anchored(_prefilter(p)) for p in patterns]
    grouped: dict[bytes, list[re.Pattern[bytes]]] = {}
    for anchor, folded, scan in found:
        if not folded and len(anchor) >= 2 and anchor[-1:] in (b"_", b"-"):
            grouped.setdefault(anchor[-1:], []).append(scan)
    gates: list[Gate] = []
    in_group: set[int] = set()
    for sep, members in grouped.items():
        if len(members) >= 2:
            union = b"|".join(b"(?:" + s.pattern + b")" for s in members)
            gates.append(Gate(re.compile(union), needles=(sep,)))
            in_group.update(id(s) for s in members)
    for anchor, folded, scan in found:
        if id(scan) not in in_group:
            gates.append(Gate(scan, _rare(anchor), (anchor,) if anchor else (), folded))
    return gates
