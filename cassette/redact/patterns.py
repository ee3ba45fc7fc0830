"""What counts as a secret: the key names whose value is one, the harmless headers, and
one table of text patterns (:data:`DEFAULT_PATTERNS`), each compiled into a :class:`Rule`.

A pattern may name the part to replace ``(?P<secret>...)``; without it the whole match
is replaced. A new kind of secret is one more row of the table (and, if the line gates
of :mod:`.gates` cannot see it, one more gate there). Names and keys match in ASCII case
only, as the gates lower bytes.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from typing import NamedTuple

from .context import (
    AWS_AFTER_ID,
    AWS_AFTER_WORD,
    AWS_BEFORE_ID,
    DEFAULT_KEYWORDS,
    assigned,
    is_aws_secret,
    is_random,
    is_told_value,
    is_value,
    keyword,
    named_after,
    told,
    truncated_keyword,
)

__all__ = [
    "ASSIGNMENT",
    "DEFAULT_KEYS",
    "DEFAULT_KEYWORDS",
    "DEFAULT_PATTERNS",
    "HEADER_KEYS",
    "SAFE_HEADERS",
    "TOLD",
    "Rule",
    "compile_rule",
    "truncated_tail",
]

# Keys whose value is replaced whatever it holds. Compared lowered, ``-`` read as ``_``;
# a leading ``*`` matches any prefix ending in ``_``/``-`` (``*_token``: ``X-Custom-Token``,
# ``auth_token``; not ``max_tokens`` or a bare ``token``, which logprobs use for text).
DEFAULT_KEYS: tuple[str, ...] = (
    "api_key", "apikey", "x_api_key", "api_token", "authorization", "proxy_authorization",
    "access_token", "refresh_token", "id_token", "client_secret", "secret_key",
    "aws_secret_access_key", "password", "passwd", "passphrase", "secret", "private_key",
    "credentials", "cookie", "set_cookie", "x_goog_api_key", "*_password", "*_passwd",
    "*_pwd", "*_secret", "*_token", "*_api_key", "*_apikey", "*_secret_key",
    "*_private_key", "*_access_key", "*_credentials",
)  # fmt: skip

# Under a request's top-level ``headers``/``extra_headers``/``default_headers`` (never part
# of the hash) every value is replaced except these harmless ones (``*``: a prefix).
HEADER_KEYS = frozenset({"headers", "extra_headers", "default_headers"})
SAFE_HEADERS: tuple[str, ...] = (
    "accept", "accept-encoding", "accept-language", "anthropic-beta", "anthropic-version",
    "cache-control", "connection", "content-type", "content-length", "openai-beta",
    "openai-version", "retry-after", "retry-after-ms", "user-agent", "x-request-id",
    "x-ratelimit-*", "x-stainless-*",
)  # fmt: skip


def _word(head: str) -> str:
    """``head`` (a fixed-width literal or class) where it does not go on a word: what
    precedes it is no letter or digit (``_`` may be: ``key_sk-...``), or is an escape such
    as ``\n`` in JSON held in a string (tool-call arguments). The look back comes after
    the head, so the regex engine can jump to the head."""
    return (
        f"{head}(?:(?<![A-Za-z0-9]{head})|(?<=\\\\[nrtbf]{head})|(?<=\\\\u[0-9A-Fa-f]{{4}}{head}))"
    )


def _anycase(word: str) -> str:
    """``word`` in any case, spelled with classes (the engine jumps to those, not to an
    ``(?i:...)`` group)."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


_SP = r"(?:\s|\\[nrt])+"  # whitespace, or its escape in JSON held in a string
# (the mark a secret starts with, the rest of it): provider keys and tokens
_MARKED = (
    ("sk-", r"(?:proj-|ant-|or-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),  # OpenAI, ...
    (_anycase("bearer"), _SP + r"[A-Za-z0-9._~+/=\-]{12,}"),
    ("A[KS]IA", r"[0-9A-Z]{16}(?![0-9A-Za-z])"),  # AWS access key id
    ("AIza", r"[0-9A-Za-z_\-]{35}"),  # Google
    ("gh[pousr]_", r"[A-Za-z0-9]{30,}"),  # GitHub
    ("github_pat_", r"[A-Za-z0-9_]{40,}"),
    ("xox[abprs]-", r"[A-Za-z0-9\-]{10,}"),  # Slack
    ("hf_", r"[A-Za-z0-9]{30,}"),  # Hugging Face
    ("fw_", r"[A-Za-z0-9]{20,}"),  # Fireworks
    ("gsk_", r"[A-Za-z0-9]{20,}"),  # Groq
    ("[sr]k_", r"(?:live|test)_[A-Za-z0-9]{10,}"),  # Stripe secret and restricted keys
    ("eyJ", r"[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]+"),  # JWT
    # HTTP Basic credentials (checked to decode to a printable ``user:password``)
    (
        _anycase("basic"),
        r"(?:[:=]|%20|\s|\\+[nrt])+(?P<secret>[A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])",
    ),
)
BASIC = _word(_MARKED[-1][0]) + _MARKED[-1][1]
_KEYWORD = keyword(DEFAULT_KEYWORDS)
ASSIGNMENT = assigned(_KEYWORD)  # name=value, "name": "value", --name value, ?name=value
TOLD = told(_KEYWORD)  # my password is ..., token abc123...
NAMED_AFTER = named_after(_KEYWORD)  # <hex> is my access key

DEFAULT_PATTERNS: tuple[str, ...] = (
    *(_word(head) + rest for head, rest in _MARKED),
    # PEM private key blocks, whole; without an END line, the base64 body that follows
    r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END[A-Z0-9 ]{0,40}"
    r"PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,.\-]*)",
    # the password of a URL (postgres://user:PASSWORD@host): scheme, user and host stay
    r"://[^\s:/?#@\"'<>]{0,256}:(?P<secret>[^\s/?#\"'<>]{1,256})@",  # (bounded: linear)
    ASSIGNMENT,
    TOLD,
    NAMED_AFTER,
    AWS_AFTER_ID,
    AWS_BEFORE_ID,
    AWS_AFTER_WORD,
)
# what a default pattern's find must also be to be replaced
Check = Callable[[str, str], bool]  # (a find, the two characters before it) -> a secret?
CHECKS: dict[str, Check] = {
    ASSIGNMENT: is_value, TOLD: is_told_value, NAMED_AFTER: is_random, AWS_AFTER_ID: is_aws_secret,
    AWS_BEFORE_ID: is_aws_secret, AWS_AFTER_WORD: is_aws_secret,
}  # fmt: skip

# the start of a secret at the very end of a text: what a stream cut short (closed early,
# or failed) may end with, scrubbed although it is too short for its pattern
TRUNCATED = re.compile(
    "(?:" + "|".join(_word(head) for head, _ in _MARKED) + r")(?:\s|\\[nrt])*[^\s\"'<>]*\Z"
    r"|-----BEGIN(?![\s\S]*-----END)[\s\S]*\Z"
    r"|://[^\s:/?#@\"'<>]{0,256}:(?P<secret>[^\s/?#@\"'<>]*)\Z|"
    + truncated_keyword(_KEYWORD)
    + "|A[KS]IA[0-9A-Z]{16}[\\s\\S]{0,160}?(?<![A-Za-z0-9+/=])(?P<aws>[A-Za-z0-9+/]{1,39})\\Z"
)


def truncated_tail(text: str) -> tuple[int, int] | None:
    """The span of a secret cut short at the end of ``text``, if it ends with one."""
    m = TRUNCATED.search(text, max(0, len(text) - 4096))
    if m is None:
        return None
    groups = ("secret", "value", "aws")
    start = next((m.start(g) for g in groups if m.group(g) is not None), m.start())
    return (start, len(text)) if start < len(text) else None


def _basic(token: str, before: str = "") -> bool:
    """Whether ``token`` is base64 of a printable ``user:password`` (not a prose word)."""
    try:
        text = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode()
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()


class Rule(NamedTuple):
    """A compiled pattern: ``group`` names the part to replace (else the whole match);
    ``check`` rejects a find it leaves alone; ``gated``: a default pattern, which the line
    gates stand for (the user's run on every string)."""

    find: re.Pattern[str]
    group: str | None
    check: Check | None
    gated: bool


def compile_rule(source: str, check: Check | None = None) -> Rule:
    """``source`` compiled; ``check``: what its finds must also be (a default pattern's
    own check if not given)."""
    find = re.compile(source)
    group = "secret" if "secret" in find.groupindex else None
    check = check or (_basic if source == BASIC else CHECKS.get(source))
    return Rule(find, group, check, source in DEFAULT_PATTERNS)
