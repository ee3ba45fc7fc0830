"""What counts as a secret: the key names whose value is one, the harmless headers, and
one table of text patterns (:data:`DEFAULT_PATTERNS`), each compiled into a :class:`Rule`.

A pattern may name the part to replace ``(?P<secret>...)`` (else the whole match). A
secret with no mark of its own is found by the credential keyword around it (the rules
of gitleaks' generic rule and detect-secrets' keyword plugin), and replaced only if it
looks like one (:func:`is_value`), so a long hex token alone (a git SHA) is kept. A new
kind of secret is one more row of the table (and, if the line gates of :mod:`.gates`
cannot see it, one more gate there). Names match in ASCII case only, as the gates lower.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_KEYWORDS",
    "DEFAULT_PATTERNS",
    "HEADER_KEYS",
    "SAFE_HEADERS",
    "Check",
    "Rule",
    "assigned",
    "compile_rule",
    "is_told_value",
    "is_value",
    "keyword",
    "told",
    "truncated_tail",
    "user_keyword",
]

# credential keywords (regex, ASCII case ignored); a name ends with one: ``db_password``,
# ``X-Auth-Token``, ``GITHUB_TOKEN``, ``SECRET_ACCESS_KEY``; ``tokens`` or
# ``password_hint`` do not
DEFAULT_KEYWORDS: tuple[str, ...] = (
    r"passw(?:or)?d", r"(?<=[_\-])pass", "passphrase", "pwd", "secret", "token", r"api[_\- ]?key",
    r"access[_\- ]?key", r"(?:secret|private|client|signing|encryption|master)[_\- ]key",
    "credentials?", "auth", r"authori[sz]ation", "bearer",
)  # fmt: skip

_Q = "[\"'`]"
# where a token starts: after no base64 character, or after an escape of JSON in a string
_START = "(?:(?<![A-Za-z0-9+/=\\\\])|(?<=\\\\[nrtbf])|(?<=\\\\u[0-9A-Fa-f]{4}))"
_END = "(?:[.:*]*(?=[\\s\"'`\\\\<>,;&)}\\]]|\\Z))"  # a bare value's end (a full stop is not in it)
# the value: up to the closing quote if quoted, else up to a space or a delimiter
_VALUE = (
    "(?:(?P<secret>(?<=[\"'`])[^\"'`\\\\\\n]{1,400}(?=\\\\*[\"'`])"
    "|(?<![\"'`])[^\\s\"'`\\\\<>,;&()\\[\\]{}]{3,400}?)" + _END + ")"
)


def keyword(words: Iterable[str]) -> str:
    """One regex for ``words`` (regexes), in any ASCII case, not going on as a word."""
    return "(?ai:" + "|".join(words) + ")(?![A-Za-z])"


def user_keyword(word: str) -> str:
    """A user's keyword (plain text) as a regex: a space, ``_`` or ``-`` stands for any."""
    return r"[_\- ]?".join(map(re.escape, re.split(r"[\s_\-]+", word.strip())))


# between a name and its value: ``=``, ``:``, ``:=``, ``=>``, the quotes of JSON (held in
# a string too: ``\"``), or a CLI flag's space
_SEP = "(?:[\\]\"'`\\\\]{0,16}[ \\t]{0,2}(?::=|=>|==?|:)[ \\t]*(?:\\\\*" + _Q + ")?)"
_FLAG_SEP = "(?:=|[ \\t]+)(?:\\\\*" + _Q + ")?"
# the words of prose between a keyword and its value: ``my password is``, ``the token
# for bob was``, ``password:``
_TOLD = (
    "(?:[ \\t]+(?:for|of)[ \\t]+\\S{1,40}?)?"
    "(?:[ \\t]+(?ai:is|was|will be|should be|reads|are)[ \\t]*:?|[ \\t]*[:=\\-]>?)?"
    "[ \\t]+" + _Q + "?"
)


def assigned(kw: str) -> str:
    """``name=value``, ``name: value``, ``"name": "value"``, ``?name=value``,
    ``--name value`` and ``--name=value``, ``name`` ending with the keyword ``kw``."""
    return "(?:(?<=-)(?ai:[a-z0-9\\-]{0,40}?)" + kw + _FLAG_SEP + "|" + kw + _SEP + ")" + _VALUE


def told(kw: str) -> str:
    """``kw`` then its value in prose: ``my password is hunter2!``, ``token abc123...``."""
    return kw + _TOLD + _VALUE


def named_after(kw: str) -> str:
    """A long random token, then that it is a ``kw``: ``<hex> is my access key``."""
    return (
        _START + "(?P<secret>[0-9a-fA-F]{32,}|[A-Za-z0-9+/]{24,}={0,2})(?![A-Za-z0-9+/=])"
        "[ \\t]+(?ai:is|was)[ \\t]+(?ai:(?:my|the|our|your|an?)[ \\t]+)?" + kw
    )


def truncated_keyword(kw: str) -> str:
    """A keyword's value cut off at the end of a text (a stream cut short)."""
    return "(?:" + kw + "(?:" + _SEP + "|" + _TOLD + "))(?P<value>[^\\s\"'`\\\\<>]*)\\Z"


_B64 = "[A-Za-z0-9+/]"
_KEY40 = _START + "(?P<secret>" + _B64 + "{40})(?![A-Za-z0-9+/=])"
_ID = "(?<![A-Za-z0-9])A[KS]IA[0-9A-Z]{16}(?![0-9A-Za-z])"
# a 40-character key within 160 characters of an access key id, after it or before it
AWS_AFTER_ID = _ID + "[\\s\\S]{0,160}?" + _KEY40
AWS_BEFORE_ID = _KEY40 + "(?=[\\s\\S]{0,160}?" + _ID + ")"
# a 40-character key within 60 characters after "aws" or "secret"
AWS_AFTER_WORD = "(?ai:aws|secret)[\\s\\S]{0,60}?" + _KEY40

_PLACEHOLDER = re.compile(
    r"(?ai)^(?:[$%{<\[(*#]|x{3}|\.\.\.|your[_\- ])|<[^>]*>|\$\{|\{\{|^(?:null|none|nil|"
    r"true|false|undefined|redacted|required|optional|string|str|bool|int|example|changeme|"
    r"placeholder|secret|password|token|env|os\.environ)\W*$"
)
_WORDS = re.compile(r"(?:[A-Za-z][a-z]*|[A-Z]+)(?:['\-][a-z]+)*[.,;:!?]?")  # a word of prose
_VERSION = re.compile(r"(?ai)v?\d+(?:\.\w+)+|(?:sha\d*|md5)\b")  # v1.2.3, sha256:...
_MIXED = re.compile(r"(?=.*[A-Z])(?=.*[a-z])(?=.*[0-9+/])", re.DOTALL)  # (the value is ASCII)
_NAMED = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")  # password=passwd, token=tok...
# a name in code: a word, a dotted name, a call, a CamelCase type; or a number
_CODE = re.compile(
    r"[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\w+\(.*|[\d.,:_\-+]+"
    r"|\w*[A-Z][a-z]{3,}\w*[A-Z][a-z]{2,}\w*"
)


def is_value(value: str, before: str = "") -> bool:
    """Whether a keyword's value (``before``: the two characters before it) looks like a
    secret: not a placeholder, prose, a name in code or a number; a word alone only where
    code puts no name: quoted, or right after an ``=`` (``DB_PASSWORD=letmein``)."""
    if _placeholder(value):
        return False
    if value.isalpha() and value.isascii():
        return _given(before) and _NAMED.search(value) is None
    return not (_prose(value) or _CODE.fullmatch(value))


def _placeholder(value: str) -> bool:
    """Whether ``value`` is too short, holds no letter or digit, or is a placeholder."""
    short = len(value.strip()) < 4 or not any(map(str.isalnum, value))
    return short or _PLACEHOLDER.search(value) is not None


def _prose(value: str) -> bool:
    words = value.split()
    return len(words) > 1 and all(map(_WORDS.fullmatch, words))


def _given(before: str) -> bool:
    """Whether a value after ``before`` is given as data: quoted, or ``name=value``."""
    return before[-1:] in ("'", '"', "`") or (before[-1:] == "=" and before[:1] not in " =!<>")


def is_told_value(value: str, before: str = "") -> bool:
    """A value told in prose: one word of 6+ characters holding a letter and a digit or a
    symbol (``hunter2!``, a hex token), so ``the token limit is`` keeps its words."""
    letters = sum(map(str.isalpha, value))
    mixed = len(value) >= 6 and 0 < letters < len(value)
    return mixed and is_value(value) and _VERSION.match(value) is None


def is_random(value: str, before: str = "") -> bool:
    """A token that is no word: hex with letters and digits, or upper and lower case
    letters and digits (a 40-character one: an AWS secret access key; a git SHA is hex)."""
    if all(c in "0123456789abcdefABCDEF" for c in value):
        return not value.isdigit() and not value.isalpha()
    return is_aws_secret(value)


def is_aws_secret(value: str, before: str = "") -> bool:
    """A 40-character base64 token with upper and lower case letters and a digit (an AWS
    secret access key; a git SHA has no upper case)."""
    return _MIXED.match(value) is not None


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
    """``head`` (fixed width) not going on a word: after no letter or digit, or after an
    escape of JSON held in a string; the look back follows it, so the engine jumps to it."""
    return (
        f"{head}(?:(?<![A-Za-z0-9]{head})|(?<=\\\\[nrtbf]{head})|(?<=\\\\u[0-9A-Fa-f]{{4}}{head}))"
    )


def _anycase(word: str) -> str:
    """``word`` in any case, spelled with classes (which the engine jumps to)."""
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


def _basic(token: str, before: str = "") -> bool:
    """Whether ``token`` is base64 of a printable ``user:password`` (not a prose word)."""
    try:
        text = base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode()
    except (binascii.Error, ValueError):
        return False
    return ":" in text and text.isprintable()


# what a default pattern's find must also be to be replaced
Check = Callable[[str, str], bool]  # (a find, the two characters before it) -> a secret?
CHECKS: dict[str, Check] = {
    ASSIGNMENT: is_value, TOLD: is_told_value, NAMED_AFTER: is_random, AWS_AFTER_ID: is_aws_secret,
    AWS_BEFORE_ID: is_aws_secret, AWS_AFTER_WORD: is_aws_secret, BASIC: _basic,
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
    check = check or CHECKS.get(source)
    return Rule(find, group, check, source in DEFAULT_PATTERNS)
