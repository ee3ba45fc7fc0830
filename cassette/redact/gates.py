"""The line gates: cheap scans of a line's JSON bytes that rule out most lines before any
pattern runs. Each is looser than the default patterns it stands for (any case, ``-`` and
``_`` alike, escapes of JSON held in a string allowed), so a line that passes none holds
nothing they would match (``tests/redact`` checks it on the corpus in every placement).
A gate is a scan (on the raw bytes: after a one-byte search), led by a literal."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

__all__ = ["Gates", "Scans", "line_gates"]

Gates = tuple[tuple[bytes, Callable[[bytes], object]], ...]  # (byte, the scan's search)
Scans = tuple[Callable[[bytes], object], ...]

# on the line's bytes as they are: the rarer shapes, each after a one-byte search (a PEM
# block's "PRIVATE KEY" passes the gate of "key")
RAW: Gates = (
    (b"J", re.compile(rb"eyJ[A-Za-z0-9_\-]{10,}\.eyJ").search),  # JWT
    (b"@", re.compile(rb"://[^\s/]*@").search),  # URL password
    (b"A", re.compile(rb"A(?:[KS]IA[0-9A-Z]{16}|Iza[0-9A-Za-z_\-]{35})").search),  # AWS, Google
)

# on the folded copy (lowered, "-" read as "_"), each led by its rarer letters (the engine
# jumps to a leading literal faster than a substring test runs, but tries a class anywhere)
FOLDED: Scans = tuple(re.compile(source).search for source in (
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


def _held(key: str) -> str:
    """How the secret ``key`` (folded; ``*_x`` a suffix) ends every ``"key":`` of it."""
    return key[1:] if key[0] == "*" else '"' + key


def _key_scan(keys: list[str]) -> Scans:
    """A scan for the ``"key":`` of secret ``keys``: a look back at their last five bytes,
    after one at their last two, where most keys fail (led by their last three if shared)."""
    words = {_held(k)[-5:] for k in keys}
    if not words:
        return ()
    looks = b"(?:" + _by_width(words) + b")"
    tails = {w[-3:] for w in words}
    if len(tails) == 1:
        return (re.compile(re.escape(tails.pop().encode()) + b'":' + looks).search,)
    width = min(2, *map(len, words))  # (a look back has one width)
    ends = b"|".join(sorted({re.escape(w[-width:].encode()) for w in words}))
    return (re.compile(b":(?<=(?:" + ends + b')":)' + looks).search,)


def _by_width(words: set[str]) -> bytes:
    """Look backs for ``words`` from ``":``, one per width (a look back has one width)."""
    by_width: dict[int, list[bytes]] = {}
    for word in sorted(words):
        by_width.setdefault(len(word), []).append(re.escape(word.encode()))
    return b"|".join(b"(?<=(?:" + b"|".join(alts) + b')":)' for alts in by_width.values())


@functools.lru_cache(maxsize=4096)  # (every Redactor asks it of the same default keys)
def _seen(key: str, scans: Scans) -> bool:
    """Whether a scan finds the secret ``key`` in its ``"key":`` alone (so in every line)."""
    held = (_held(key) + '":').encode()
    return any(scan(held) for scan in scans)


def line_gates(keys: list[str], defaults: bool) -> tuple[Gates, Scans]:
    """The gates (on the raw bytes, on the folded copy) of the default patterns if
    ``defaults``, and of the secret ``keys`` (folded) no other sees (of the defaults: cookie)."""
    raw, folded = (RAW, FOLDED) if defaults else ((), ())
    return raw, (*folded, *_key_scan([k for k in keys if not _seen(k, folded)]))
