"""Secret scrubbing, applied to every line before it touches disk (see :class:`Redactor`)."""

from .patterns import DEFAULT_KEYS, DEFAULT_KEYWORDS, DEFAULT_PATTERNS
from .redactor import IDENTITY, REDACTED, Redactor

__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_KEYWORDS",
    "DEFAULT_PATTERNS",
    "IDENTITY",
    "REDACTED",
    "Redactor",
]
