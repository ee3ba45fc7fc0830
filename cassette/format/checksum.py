"""``meta.checksum``: the CRC-32 (8 hex digits) of the compact JSON ``[response, error]``
of an interaction line, from its values or from its bytes. Pure."""

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
_CRC_KEY = b'"' + CHECKSUM_KEY.encode() + b'":"'
_CRC_END = len(_CRC_KEY) + 8 + 4  # "checksum":"0123abcd"}} and the newline


def checksum(response: Any, error: Any) -> str:
    """``meta.checksum`` of a line holding ``response`` and ``error``."""
    return "%08x" % zlib.crc32(dumps([response, error]))  # noqa: UP031 - the fastest


def crc_of_slices(raw: bytes, start: int, stop: int) -> int:
    """The CRC-32 of ``[`` + ``raw[start:stop]`` + ``,null]`` (a response, no error)."""
    return zlib.crc32(_NO_ERROR, zlib.crc32(raw[start:stop], _OPEN))


def checked_response(raw: bytes, tail: int) -> int:
    """Where the response ends in a line as the recorder writes it (``"response":`` at
    ``tail``, ``meta.checksum`` last) if the checksum matches; else 0."""
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
