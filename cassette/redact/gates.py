"""The line gates: cheap scans of a line's JSON bytes that rule out most lines before any
pattern runs. Each is looser than the default patterns it stands for (any case, ``-`` and
``_`` alike, escapes of JSON held in a string allowed), so a line that passes none holds
nothing they would match (``tests/redact`` checks it on the corpus in every placement).
A gate is (a byte that must be there, then a scan led by a literal the engine jumps to).
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["Gates", "line_gates"]

Gate = tuple[bytes, re.Pattern[bytes]]
Gates = tuple[tuple[bytes, Callable[[bytes], object]], ...]  # (byte, the scan's search)

# on the line's bytes as they are: the rarer shapes, each after a one-byte search
RAW: tuple[Gate, ...] = (
    (b"J", re.compile(rb"eyJ[A-Za-z0-9_\-]{10,}\.eyJ")),  # JWT
    (b"V", re.compile(rb"PRIVATE KEY")),  # PEM
    (b"@", re.compile(rb"://[^\s/]*@")),  # URL password
    (b"A", re.compile(rb"A(?:[KS]IA[0-9A-Z]{16}|Iza[0-9A-Za-z_\-]{35})")),  # AWS, Google
)

# on the folded copy (lowered, "-" read as "_"); the scan for ":" is made by line_gates
FOLDED: tuple[Gate, ...] = (
    # every pattern led by a word ending in "-" or "_": sk-, gsk_ and [sr]k_live_ all end
    # in "sk_"/"k_..." once folded
    (
        b"_",
        re.compile(
            rb"_(?=[a-z0-9_]{10})(?<=[kpousrabtfwe]_)(?:(?<=sk_)(?=[a-z0-9_]{16})"
            rb"|(?<=gh[pousr]_)|(?<=xox[abprs]_)|(?<=_pat_)|(?<=hf_|fw_)|(?<=_live_|_test_))"
        ),
    ),
    (b"b", re.compile(rb"b(?:earer|asic)")),
    # the credential keywords (any name ending with one: db_password, api key, x_auth_token)
    (b"pass", re.compile(rb"pass(?:w(?:or)?d|phrase)?(?![a-z])")),
    (b"pwd", re.compile(rb"pwd(?![a-z])")),
    (b"secret", re.compile(rb"secret")),
    (b"aws", re.compile(rb"aws")),
    (b"token", re.compile(rb"token(?![a-z])")),
    (b"key", re.compile(rb"key(?![a-z])")),
    (b"credential", re.compile(rb"credentials?(?![a-z])")),
    (b"auth", re.compile(rb"auth(?:ori[sz]ation)?(?![a-z])")),
)


def _key_looks(keys: list[str]) -> bytes | None:
    """A look back from the ``:`` of ``"key":`` for the ``keys`` that name a secret
    (folded; ``*_x`` a suffix): at their last five bytes (all of a shorter key, with its
    opening quote), after a look at their last two, where most keys of a line fail."""
    words = {(k[1:] if k[0] == "*" else '"' + k)[-5:] for k in keys}
    if not words:
        return None
    looks = _by_width(words)
    if min(map(len, words)) < 2:
        return looks
    ends = b"|".join(sorted({re.escape(w[-2:].encode()) for w in words}))
    return b"(?<=(?:" + ends + b')":)(?:' + looks + b")"


def _by_width(words: set[str]) -> bytes:
    """Look backs for ``words`` from ``":``, one per width (a look back has one width)."""
    by_width: dict[int, list[bytes]] = {}
    for word in sorted(words):
        by_width.setdefault(len(word), []).append(re.escape(word.encode()))
    return b"|".join(b"(?<=(?:" + b"|".join(alts) + b')":)' for alts in by_width.values())


def line_gates(keys: list[str], defaults: bool) -> tuple[Gates, Gates]:
    """The gates (on the raw bytes, on the folded copy) of the secret ``keys`` (folded
    names) and, if ``defaults``, of the default patterns; the scan led by ``:`` looks for
    both ``name: value`` and the keys."""
    look = _key_looks(keys)
    colon = [(b":", re.compile(b":(?:" + look + b")"))] if look else []
    raw, folded = (RAW, (*FOLDED, *colon)) if defaults else ((), tuple(colon))
    return tuple((b, g.search) for b, g in raw), tuple((b, g.search) for b, g in folded)
