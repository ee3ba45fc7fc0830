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

# the last five (lowered) bytes of every name ASSIGNMENT matches, for lookbehinds
_TAILS = rb"(?:sword|asswd|hrase|..pwd|ecret|token|ntial|tials|pikey|.[_\-]key)"


def _after(sep: bytes, *before: bytes) -> re.Pattern[bytes]:
    """A regex led by ``sep`` that looks back for a name's tail then one of ``before``."""
    looks = b"|".join(b"(?<=" + _TAILS + b + re.escape(sep) + b")" for b in before)
    return re.compile(re.escape(sep) + b"(?:" + looks + b")")


# on the line's bytes as they are: the rarer shapes, each after a one-byte search
RAW: tuple[Gate, ...] = (
    (b"J", re.compile(rb"eyJ[A-Za-z0-9_\-]{10,}\.eyJ")),  # JWT
    (b"V", re.compile(rb"PRIVATE KEY")),  # PEM
    (b"@", re.compile(rb"://[^\s/]*@")),  # URL password
    (b"A", re.compile(rb"A(?:[KS]IA[0-9A-Z]{16}|Iza[0-9A-Za-z_\-]{35})")),  # AWS, Google
)

# on the folded copy (lowered, "-" read as "_"); the scan for ":" is made by line_gates
FOLDED: tuple[Gate, ...] = (
    (b"=", _after(b"=", b"", b" ", b"  ", rb"\\t")),  # name=value
    (b"'", _after(b"':", b"")),  # 'name': value
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
)

# "name": value in JSON held in a string, nested n deep (2**n - 1 backslashes before ")
_NESTED = b"|".join(b"(?<=" + _TAILS + rb"\\" * (2**n - 2) + rb'\\":)' for n in (1, 2, 3, 4))
_NAMES = rb"(?= )(?<=" + _TAILS + rb":)|(?<=\\" + rb'":)(?:' + _NESTED + b")"  # name: value


def _key_looks(keys: list[str]) -> bytes | None:
    """A look back from the ``:`` of ``"key":`` for the ``keys`` that name a secret
    (folded; ``*_x`` a suffix): at their last five bytes (all of a shorter key, with its
    opening quote), after a look at their last two, where most keys of a line fail."""
    words = {(k[1:] if k[0] == "*" else '"' + k)[-5:] for k in keys}
    if not words:
        return None
    by_width: dict[int, list[bytes]] = {}
    for word in sorted(words):
        by_width.setdefault(len(word), []).append(re.escape(word.encode()))
    looks = b"|".join(b"(?<=(?:" + b"|".join(alts) + b')":)' for alts in by_width.values())
    if min(map(len, words)) < 2:
        return looks
    ends = b"|".join(sorted({re.escape(w[-2:].encode()) for w in words}))
    return b"(?<=(?:" + ends + b')":)(?:' + looks + b")"


def line_gates(keys: list[str], defaults: bool) -> tuple[Gates, Gates]:
    """The gates (on the raw bytes, on the folded copy) of the secret ``keys`` (folded
    names) and, if ``defaults``, of the default patterns; the scan led by ``:`` looks for
    both ``name: value`` and the keys."""
    looks = [*([_NAMES] if defaults else []), *filter(None, [_key_looks(keys)])]
    colon = [(b":", re.compile(b":(?:" + b"|".join(looks) + b")"))] if looks else []
    raw, folded = (RAW, (*FOLDED, *colon)) if defaults else ((), tuple(colon))
    return tuple((b, g.search) for b, g in raw), tuple((b, g.search) for b, g in folded)
