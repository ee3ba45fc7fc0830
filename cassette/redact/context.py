"""Secrets that carry no mark of their own, found by the words around them (the rules of
gitleaks' generic rule and detect-secrets' keyword plugin, rewritten as a few regexes):

- a value after a credential keyword (``password``, ``token``, ``api key``, ...) in an
  assignment, a key-value or YAML line, JSON, a URL query or a CLI flag
  (:func:`assigned`), or in prose, ``my password is ...`` (:func:`told`), or a long
  random token said to be one, ``<hex> is my access key`` (:func:`named_after`);
- an AWS secret access key (40 characters) near an access key id or after an
  ``aws``/``secret`` word (:data:`AWS_AFTER_ID`, ...).

A keyword's value is a secret only if it looks like one (:func:`is_value`): not a
placeholder, a word, prose, a number or a reference in code; a told value (prose) must
also hold a digit or a symbol. A long hex or base64 token is thus scrubbed only next to
a keyword, never alone, so git SHAs, digests and UUIDs elsewhere are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "AWS_AFTER_ID",
    "AWS_AFTER_WORD",
    "AWS_BEFORE_ID",
    "DEFAULT_KEYWORDS",
    "assigned",
    "is_aws_secret",
    "is_random",
    "is_told_value",
    "is_value",
    "keyword",
    "named_after",
    "told",
    "truncated_keyword",
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
_NAMED = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred")  # password=passwd, token=tok...
# a name in code: a word, a dotted name, a call, a CamelCase type; or a number
_CODE = re.compile(
    r"[A-Za-z_]+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\w+\(.*|[\d.,:_\-+]+"
    r"|\w*[A-Z][a-z]{3,}\w*[A-Z][a-z]{2,}\w*"
)


def is_value(value: str, before: str = "") -> bool:
    """Whether a keyword's value (``before``: the two characters before it) looks like a
    secret: not a placeholder (``<token>``, ``${TOKEN}``, ``your-api-key``, ``None``),
    prose, a name in code (``self.token``, ``get_password()``, ``api_key``) or a number;
    a word alone (``letmein``) only where code puts no name: quoted, or right after an
    ``=`` with no space before it (``DB_PASSWORD=letmein``)."""
    if len(value.strip()) < 4 or not any(c.isalnum() for c in value):
        return False
    if _PLACEHOLDER.search(value):
        return False
    if value.isalpha() and value.isascii():
        return _given(before) and _NAMED.search(value) is None
    words = value.split()
    prose = len(words) > 1 and all(_WORDS.fullmatch(w) for w in words)
    return not (prose or _CODE.fullmatch(value))


def _given(before: str) -> bool:
    """Whether a value after ``before`` is given as data: quoted, or ``name=value``."""
    return before[-1:] in ("'", '"', "`") or (before[-1:] == "=" and before[:1] not in " =!<>")


def is_told_value(value: str, before: str = "") -> bool:
    """A value told in prose: one word of 6+ characters holding a letter and a digit or a
    symbol (``hunter2!``, a hex token), so ``the token limit is`` keeps its words."""
    if len(value) < 6 or not is_value(value) or not any(c.isalpha() for c in value):
        return False
    return any(not c.isalpha() for c in value) and _VERSION.match(value) is None


def is_random(value: str, before: str = "") -> bool:
    """A token that is no word: hex with letters and digits, or upper and lower case
    letters and digits (a 40-character one: an AWS secret access key; a git SHA is hex)."""
    if all(c in "0123456789abcdefABCDEF" for c in value):
        return not value.isdigit() and not value.isalpha()
    return is_aws_secret(value)


def is_aws_secret(value: str, before: str = "") -> bool:
    """A 40-character base64 token with upper and lower case letters and a digit (an AWS
    secret access key; a git SHA has no upper case)."""
    return (
        any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and any(c.isdigit() or c in "+/" for c in value)
    )
