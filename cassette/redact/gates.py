"""The line gates: cheap scans of a line's JSON bytes that rule out most lines before any
pattern runs. Each is looser than the default patterns it stands for (any case, ``-`` and
``_`` alike, escapes of JSON held in a string allowed), so a line that passes none holds
nothing they would match (``tests/redact`` checks it on the corpus in every placement).
A gate on the raw bytes is (a rare byte, looked for first, then a scan); one on the folded
copy is a scan alone, led by a literal the engine jumps to (as fast as a substring test).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

__all__ = ["Gates", "Scans", "line_gates"]

Gate = tuple[bytes, re.Pattern[bytes]]
Search = Callable[[bytes], object]
Gates = tuple[tuple[bytes, Search], ...]  # (byte, the scan's search)
Scans = tuple[Search, ...]

# on the line's bytes as they are: the rarer shapes, each after a one-byte search (a PEM
# block's "PRIVATE KEY" passes the gate of "key")
RAW: tuple[Gate, ...] = (
    (b"J", re.compile(rb"eyJ[A-Za-z0-9_\-]{10,}\.eyJ")),  # JWT
    (b"@", re.compile(rb"://[^\s/]*@")),  # URL password
    (b"A", re.compile(rb"A(?:[KS]IA[0-9A-Z]{16}|Iza[0-9A-Za-z_\-]{35})")),  # AWS, Google
)

# on the folded copy (lowered, "-" read as "_"); the scan for the keys is made by line_gates.
# Each is led by a literal (its rarer letters, the rest looked back at): the engine jumps
# to one, as fast as a substring test, but tries a scan led by a class at every byte
FOLDED: tuple[re.Pattern[bytes], ...] = tuple(re.compile(source) for source in (
    # every pattern led by a word ending in "-" or "_": sk-, gsk_ and [sr]k_live_ all end
    # in "sk_"/"k_..." once folded
    rb"_(?=[a-z0-9_]{10})(?<=[kpousrabtfwe]_)(?:(?<=sk_)(?=[a-z0-9_]{16})"
    rb"|(?<=gh[pousr]_)|(?<=xox[abprs]_)|(?<=_pat_)|(?<=hf_|fw_)|(?<=_live_|_test_))",
    rb"b(?:earer|asic)",
    # the credential keywords (any name ending with one: db_password, api key, x_auth_token)
    rb"pass(?:w(?:or)?d|phrase)?(?![a-z])", rb"w(?:s(?<=aws)|d(?<=pwd)(?![a-z]))",
    rb"cre(?:t(?<=secret)|dentials?(?![a-z]))", rb"ke(?:y|n(?<=token))(?![a-z])",
    rb"uth(?<=auth)(?:ori[sz]ation)?(?![a-z])",
))  # fmt: skip


def _key_scan(keys: list[str]) -> bytes | None:
    """A scan for the ``"key":`` of the ``keys`` that name a secret (folded; ``*_x`` a
    suffix): a look back at their last five bytes (all of a shorter key, with its opening
    quote), after one at their last two, where most keys fail (led by their last three if
    all share them)."""
    words = {(k[1:] if k[0] == "*" else '"' + k)[-5:] for k in keys}
    if not words:
        return None
    looks = b"(?:" + _by_width(words) + b")"
    tails, ends = {w[-3:] for w in words}, {w[-2:] for w in words}
    if len(tails) == 1:
        return re.escape(tails.pop().encode()) + b'":' + looks
    if min(map(len, ends)) < 2:
        return b":" + looks
    return b":(?<=(?:" + b"|".join(sorted(re.escape(e.encode()) for e in ends)) + b')":)' + looks


def _by_width(words: set[str]) -> bytes:
    """Look backs for ``words`` from ``":``, one per width (a look back has one width)."""
    by_width: dict[int, list[bytes]] = {}
    for word in sorted(words):
        by_width.setdefault(len(word), []).append(re.escape(word.encode()))
    return b"|".join(b"(?<=(?:" + b"|".join(alts) + b')":)' for alts in by_width.values())


@functools.lru_cache(maxsize=4096)  # (every Redactor asks it of the same default keys)
def _seen(key: str, scans: tuple[re.Pattern[bytes], ...]) -> bool:
    """Whether one of ``scans`` finds the secret ``key`` (folded; ``*_x`` a suffix) in
    ``"key":`` (``_x":``) alone, so in every line that holds it."""
    held = (key[1:] if key[0] == "*" else '"' + key).encode() + b'":'
    return any(scan.search(held) for scan in scans)


def line_gates(keys: list[str], defaults: bool) -> tuple[Gates, Scans]:
    """The gates (on the raw bytes, on the folded copy) of the secret ``keys`` (folded
    names) and, if ``defaults``, of the default patterns; a scan for ``"key":`` looks for
    the keys that no other gate sees (of the defaults: ``cookie``)."""
    raw, folded = (RAW, FOLDED) if defaults else ((), ())
    scan = _key_scan([k for k in keys if not _seen(k, folded)])
    colon = (re.compile(scan),) if scan else ()
    return tuple((b, g.search) for b, g in raw), tuple(g.search for g in (*folded, *colon))
