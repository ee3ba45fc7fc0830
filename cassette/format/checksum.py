"""The checksum of what an interaction line serves: ``meta.checksum``.

The CRC-32 (zlib's), as 8 hex digits, of the compact JSON ``[response, error]`` as the
line holds them (orjson, keys in their written order; ``error`` null when the line has
none). A CRC finds every change of up to 32 neighbouring bits and all but one in 4 billion
other changes; it guards against damage, not forgery (anyone can recompute it), and costs
a quarter of a sha256 on a typical response. The recorder adds it to every interaction
line it writes, after secrets were scrubbed; replay checks it (as a lean line is loaded
for a line laid out as the recorder writes it, else the first time the line is served)
and :mod:`cassette.dataset.validate` checks every line, so a response changed on disk (a bit
flip, an edit) is refused when it is asked for rather than served. Lines without it
(files written before it existed) are served unchecked.

Since the recorder writes the response compact, the checksum can be taken from bytes
already at hand: :func:`crc_of_slices` from a line's bytes (the recorder's as it writes
the line), :func:`checked_response` where a reader finds them; :func:`checksum` dumps the
values again (a line with an error, any other layout). Pure: values in, strings and bytes
out, no IO.
"""

from __future__ import annotations

import zlib
from typing import Any

from .codec import dumps

__all__ = [
    "CHECKSUM_KEY",
    "RESPONSE",
    "checked_response",
    "checksum",
    "crc_of_slices",
    "with_checksum",
]

CHECKSUM_KEY = "checksum"
_OPEN = zlib.crc32(b"[")
_NO_ERROR = b",null]"
RESPONSE = b'"response":'
_META = b',"meta":{'
# how a line written by the recorder ends: the checksum is meta's last field
_CRC_KEY = b'"' + CHECKSUM_KEY.encode() + b'":"'
_CRC_END = len(_CRC_KEY) + 8 + 4  # "checksum":"0123abcd"}} and the newline


def checksum(response: Any, error: Any) -> str:
    """``meta.checksum`` of a line holding ``response`` and ``error``."""
    return "%08x" % zlib.crc32(dumps([response, error]))  # noqa: UP031 - the fastest


def crc_of_slices(raw: bytes, start: int, stop: int) -> int:
    """The CRC-32 of ``[`` + ``raw[start:stop]`` + ``,null]``: the checksum of a line
    without an error whose response is written as those bytes (compact, as the recorder
    dumps it), taken from the line's bytes without decoding and dumping them again."""
    return zlib.crc32(_NO_ERROR, zlib.crc32(raw[start:stop], _OPEN))


def checked_response(raw: bytes, tail: int) -> int:
    """Where the response's bytes end in the interaction line ``raw`` laid out as the
    recorder writes it (``"response":`` at ``tail``, ``meta`` last, its checksum last,
    a newline), if its ``meta.checksum`` is the CRC of those bytes; else 0 (any other
    layout, an error, a changed byte: the line is checked by :func:`checksum`)."""
    at = len(raw) - _CRC_END
    if not (raw.startswith(_CRC_KEY, at) and raw.endswith(b'"}}\n') and raw[at - 1] in b",{"):
        return 0
    stop = raw.rfind(_META, tail, at) if raw.startswith(RESPONSE, tail) else -1
    crc = b"%08x" % crc_of_slices(raw, tail + len(RESPONSE), stop) if stop > 0 else b""
    return stop if crc == raw[at + len(_CRC_KEY) : at + len(_CRC_KEY) + 8] else 0


def with_checksum(line: dict[str, Any]) -> bytes:
    """The JSON of the interaction ``line`` with ``meta.checksum`` added."""
    meta = line.get("meta")
    value = checksum(line.get("response"), line.get("error"))
    return dumps(
        {**line, "meta": {**(meta if isinstance(meta, dict) else {}), CHECKSUM_KEY: value}}
    )
