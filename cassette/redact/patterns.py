"""What counts as a secret: the default key names, the default text patterns, and the
cheap byte tests (gates) that rule a line out before any pattern runs.

A pattern may name the part to replace ``(?P<secret>...)``; without it the whole match
is replaced. Patterns run on decoded strings; gates run on a line's JSON bytes (or their
lowered form), so each gate is looser than its pattern: a gate that fails proves that no
string of the line can match (``tests/test_redact_secrets.py`` checks it on the corpus).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_PATTERNS",
    "HEADER_KEYS",
    "SAFE_HEADERS",
    "VALIDATORS",
    "Gate",
    "default_gates",
]

# Keys whose value is replaced whatever it holds. Compared lowered, ``-`` read as ``_``;
# a leading ``*`` matches any prefix ending in ``_``/``-`` (``*_token``: ``X-Custom-Token``,
# ``auth_token``; not ``max_tokens`` or a bare ``token``, which logprobs use for text).
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
    "passphrase",
    "secret",
    "private_key",
    "credentials",
    "cookie",
    "set_cookie",
    "x_goog_api_key",
    "*_password",
    "*_passwd",
    "*_pwd",
    "*_secret",
    "*_token",
    "*_api_key",
    "*_apikey",
    "*_secret_key",
    "*_private_key",
    "*_access_key",
    "*_credentials",
)

# Under a request's top-level ``headers``/``extra_headers``/``default_headers`` (never part
# of the hash) every value is replaced except these harmless ones (``*``: a prefix).
HEADER_KEYS = frozenset({"headers", "extra_headers", "default_headers"})
SAFE_HEADERS: tuple[str, ...] = (
    "accept",
    "accept-encoding",
    "accept-language",
    "anthropic-beta",
    "anthropic-version",
    "cache-control",
    "connection",
    "content-type",
    "content-length",
    "openai-beta",
    "openai-version",
    "retry-after",
    "retry-after-ms",
    "user-agent",
    "x-request-id",
    "x-ratelimit-*",
    "x-stainless-*",
)

# not inside a word; ``_`` may precede (``key_sk-...``), and so may an escape such as
# ``\n`` in JSON held in a string (tool-call arguments)
_B = r"(?:(?<![A-Za-z0-9])|(?<=\\[nrtbf])|(?<=\\u[0-9A-Fa-f]{4}))"
_SP = r"(?:\s|\\[nrt])+"  # whitespace, or its escape in JSON held in a string
# names whose value a ``name=value`` / ``name: value`` / ``"name": "value"`` gives away
_NAME = (
    r"(?:passw(?:or)?d|passphrase|pwd|secret|token|credentials?|apikey"
    r"|(?:api|access|secret|private|signing|encryption|master|client)[_\-]key)"
)
# the value: quoted (up to the closing quote) or bare (4+ characters); not null, not [..]
_VALUE = (
    r"(?!(?:null|none|true|false)\b|\[)"
    r"(?P<secret>(?<=[\"'])[^\"'\\\n]{1,400}|[^\s\"'\\<>,;&)}\]]{4,})"
)

DEFAULT_PATTERNS: tuple[str, ...] = (
    _B + r"sk-(?:proj-|ant-|or-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic, ...
    r"(?i:" + _B + r"bearer" + _SP + r")[A-Za-z0-9._~+/=\-]{12,}",
    _B + r"A[KS]IA[0-9A-Z]{16}(?![0-9A-Za-z])",  # AWS access key id
    _B + r"AIza[0-9A-Za-z_\-]{35}",  # Google
    _B + r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    _B + r"github_pat_[A-Za-z0-9_]{40,}",
    _B + r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
    _B + r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
    _B + r"fw_[A-Za-z0-9]{20,}",  # Fireworks
    _B + r"gsk_[A-Za-z0-9]{20,}",  # Groq
    _B + r"[sr]k_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe secret and restricted keys
    _B + r"eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+",  # JWT
    # PEM private key blocks, whole; without an END line, the base64 body that follows
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}"
    r"PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,.\-]*)",
    # the password of a URL (postgres://user:PASSWORD@host): scheme, user and host stay
    r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)@",
    # HTTP Basic credentials (checked to decode to printable ``user:password``)
    r"(?i:" + _B + r"basic" + _SP + r")(?P<secret>[A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])",
    # name=value, name = value, name: value, "name": "value" (also inside JSON strings,
    # such as tool-call arguments); name ends in password, secret, token, api key, ...
    r"(?i:" + _NAME + r")(?:(?:[ ]{0,2}|\t)=[ \t]*|:[ ]+|\\*[\"']:[ ]*)(?:\\*[\"'])?" + _VALUE,
)


def _basic(token: str) -> bool:
    """Whether ``token`` is base64 of a printable ``user:password`` (not a prose word)."""
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = raw.decode()
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()


# pattern -> a check of its secret (or whole match): a match it rejects is left alone
VALIDATORS: dict[str, Callable[[str], bool]] = {DEFAULT_PATTERNS[14]: _basic}


@dataclass(frozen=True)
class Gate:
    """A cheap test of a line's bytes: ``byte`` (a one-byte search) and any of ``needles``
    (substring searches) must be present, then ``scan`` must find something. ``folded``:
    tested on the lowered bytes."""

    scan: re.Pattern[bytes] | None
    byte: bytes = b""
    needles: tuple[bytes, ...] = ()
    folded: bool = False

    def test(self, raw: bytes, lowered: bytes) -> bool:
        data = lowered if self.folded else raw
        if self.byte and self.byte not in data:
            return False
        if self.needles and not any(n in data for n in self.needles):
            return False
        return self.scan is None or self.scan.search(data) is not None


def _c(source: bytes) -> re.Pattern[bytes]:
    return re.compile(source)


# the last five (lowered) bytes of every name _NAME matches, for lookbehinds
_TAILS = rb"(?:sword|asswd|hrase|..pwd|ecret|token|ntial|tials|pikey|.[_\-]key)"


def _after(sep: bytes, *before: bytes) -> re.Pattern[bytes]:
    """A regex led by ``sep`` that looks back for a name's tail then one of ``before``."""
    looks = b"|".join(b"(?<=" + _TAILS + b + re.escape(sep) + b")" for b in before)
    return re.compile(re.escape(sep) + b"(?:" + looks + b")")


def default_gates() -> tuple[Gate, ...]:
    """The gates of :data:`DEFAULT_PATTERNS`, cheapest first. In a line's JSON bytes a
    string's ``"``, ``\\`` and control characters are escaped, so the gates allow for it."""
    return (
        Gate(_c(rb"-(?<=sk-)[A-Za-z0-9_\-]{16}")),  # led by its rarest byte
        Gate(_c(rb"b(?:earer|asic)"), folded=True),
        Gate(_c(rb"A[KS]IA[0-9A-Z]{16}")),
        Gate(_c(rb"AIza[0-9A-Za-z_\-]{35}"), b"z"),
        # every pattern led by a word ending in "_": a "_" led by one of those words
        Gate(
            _c(
                rb"_(?<=(?:.gh[pousr]_|_pat_|..hf_|..fw_|.gsk_|live_|test_))"
                rb"(?:(?<=gh[pousr]_)|(?<=github_pat_)|(?<=hf_)|(?<=fw_)|(?<=gsk_)"
                rb"|(?<=[sr]k_live_)|(?<=[sr]k_test_))[A-Za-z0-9_]{10}"
            )
        ),
        Gate(_c(rb"xox[abprs]-[A-Za-z0-9\-]{10}"), b"x"),
        Gate(_c(rb"eyJ[A-Za-z0-9_\-]{10,}\.eyJ"), b"J"),
        Gate(_c(rb"PRIVATE KEY"), b"V"),
        Gate(_c(rb"://[^\s/]*@"), b"@"),
        # name=value, name: value, "name": value (JSON in a string), 'name': value
        Gate(_after(b"=", b"", b" ", b"  ", rb"\\t"), b"=", folded=True),
        Gate(_after(b": ", b""), folded=True),
        # (JSON nested n deep in strings: 2**n - 1 backslashes before the quote)
        Gate(_after(b'\\":', *(rb"\\" * (2**n - 2) for n in (1, 2, 3, 4))), folded=True),
        Gate(_after(b"':", b""), folded=True),
    )
