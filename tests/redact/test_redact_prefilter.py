"""A line is scrubbed exactly as if every pattern ran on every string of it, although the
default patterns run only on a line that passes a line gate (``Redactor.hits``: cheap
scans of its bytes) and on a long text that passes them too: the whole corpus in every
placement, spelled in every case and with ``-``/``_`` swapped (the gates fold both);
random surroundings; and random texts built from the pieces that secrets, names and
separators are made of. A speed-up of the gates can never lose a secret; how fast they
are is measured by ``bench/bench_redact_speed.py``, not here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cassette.format.codec import dumps
from cassette.redact import DEFAULT_KEYS, Redactor
from tests.helpers.fake_secrets import NON_SECRETS, SAMPLES, Sample

Json = dict[str, Any]
CUSTOM_KEYS = ["session", "*_sid"]
CUSTOM_PATTERNS = [r"tok_[a-z]{6}", r"(?i)zq-\d+"]


class FullWalk(Redactor):
    """The walk without any gate: every pattern runs on every string."""

    def hits(self, raw: bytes) -> bool:
        return True


R = Redactor()
CUSTOM = Redactor(extra_keys=CUSTOM_KEYS, extra_patterns=CUSTOM_PATTERNS)
FULL = {
    id(R): FullWalk(),
    id(CUSTOM): FullWalk(extra_keys=CUSTOM_KEYS, extra_patterns=CUSTOM_PATTERNS),
}


def _nest(text: str, depth: int) -> str:
    for _ in range(depth):
        text = json.dumps({"note": text})
    return text


# where a text may stand in a line (each a line body holding the text once)
PLACEMENTS: dict[str, Callable[[str], Json]] = {
    "content": lambda t: {"content": t},
    "prose": lambda t: {"content": f"here: {t} (keep it safe)"},
    "after _": lambda t: {"content": f"prefix_{t}"},
    "lines": lambda t: {"content": f"\n{t}\n"},
    "tabs": lambda t: {"content": f"a\t{t}\tb"},
    "quoted": lambda t: {"content": f"'{t}'"},
    "unicode": lambda t: {"content": f"é—{t}—中文"},
    "arguments": lambda t: {"arguments": _nest(t, 1)},
    "arguments 2 deep": lambda t: {"arguments": _nest(t, 2)},
    "arguments 3 deep": lambda t: {"arguments": _nest(t, 3)},
    "dict key": lambda t: {t: 1},
    "parts": lambda t: {"messages": [{"role": "user", "content": [{"type": "text", "text": t}]}]},
    "list": lambda t: {"stop": ["a", t]},
    "error": lambda t: {"error": {"type": "RuntimeError", "message": f"upstream said: {t}"}},
    "meta": lambda t: {"meta": {"note": t}, "response": {"id": "x", "n": 1}},
    "headers-like": lambda t: {"request": {"model": "m", "extra_body": {"X-Thing": t}}},
}

# ways a text may be spelled: the patterns may or may not match each (the check is only
# that the prefilter lets through whatever the walk would change)
SPELLINGS: dict[str, Callable[[str], str]] = {
    "as is": lambda t: t,
    "upper": str.upper,
    "lower": str.lower,
    "swapcase": str.swapcase,
    "- as _": lambda t: t.replace("-", "_"),
    "_ as -": lambda t: t.replace("_", "-"),
}


def check(redactor: Redactor, body: Json) -> int:
    """Assert the line (``redact_line``, as the recorder scrubs it) and the value
    (``redact``, which gates long texts) are scrubbed as the full walk scrubs them, and
    that a line the defaults change passes their gates; return the changes."""
    scrubbed, count = FULL[id(redactor)].redact(body)
    assert redactor.redact_line(body, dumps(body), dumps) == (scrubbed, count), body
    assert redactor.redact(body) == (scrubbed, count), body
    if count and redactor is R:
        assert R.hits(dumps(body)), body
    return count


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_no_placement_of_the_corpus_gets_past_the_prefilter(placement: str) -> None:
    place = PLACEMENTS[placement]
    for sample in SAMPLES:
        changed = 0
        for spell in SPELLINGS.values():
            for redactor in (R, CUSTOM):
                changed += check(redactor, place(spell(sample.text))) > 0
        assert changed, (placement, sample.kind)  # the walk does find each sample


# every separator that gives a named value away, with and without quotes and spaces
FORMS = [
    f"{q}{name}{q}{sep}{v}"
    for name in ("password", "DB_PASSWD", "api-key", "Secret", "auth_token", "credentials")
    for q in ("", "'", '"')
    for sep in ("=", " = ", "\t=", ":", ": ", ":  ", ":'", ': "', "='")
    for v in ("abcd1234'", "hunter2!", "'x y z'")
]


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_every_form_of_a_named_value(placement: str) -> None:
    changed = [check(R, PLACEMENTS[placement](text)) for text in FORMS]
    assert sum(changed) >= len(FORMS) // 2  # (some forms are no assignment: "x y z")


def test_non_secrets_and_secret_key_names() -> None:
    for text in NON_SECRETS:
        for place in PLACEMENTS.values():
            check(R, place(text))
    for key in (*DEFAULT_KEYS, "X-Custom-Token", "DB-PWD", "my_sid", "Session"):
        key = key.lstrip("*").lstrip("_")
        for spelled in (key, key.upper(), key.title(), key.replace("_", "-"), "x_" + key):
            for value in ({spelled: "v"}, {"a": [{spelled: {"b": 1}}]}, {spelled: 0}):
                check(R, value)
                check(CUSTOM, value)


def test_unicode_case_folding_cannot_hide_a_name_from_the_prefilter() -> None:
    # str patterns in (?i) and str.lower() fold the Kelvin sign to "k" and the long s to
    # "s"; the prefilter lowers bytes (ASCII): names and keys are matched in ASCII case only
    for text in ("to\u212aen=abcd1234", "pa\u017f\u017fword: hunter22", "API_\u212aEY=abcd"):
        for place in PLACEMENTS.values():
            check(R, place(text))
    for key in ("api_\u212aey", "pa\u017f\u017fword", "X-Custom-To\u212aen"):
        check(R, {key: "v"})
    assert R.redact({"API_KEY": "v", "Db-Password": "w"})[1] == 2  # ASCII case still folds


@settings(max_examples=400)
@given(
    st.sampled_from(SAMPLES),
    st.sampled_from(sorted(SPELLINGS)),
    st.sampled_from(sorted(PLACEMENTS)),
    st.text(max_size=20),
    st.text(max_size=20),
)
def test_any_surroundings_and_spelling(
    sample: Sample, spelling: str, placement: str, before: str, after: str
) -> None:
    text = before + SPELLINGS[spelling](sample.text) + after
    check(R, PLACEMENTS[placement](text))


# what secrets, the names that give a value away, and their separators are made of
_PIECES = [
    *("password", "Passwd", "PWD", "passphrase", "token", "TOKEN", "secret", "credentials"),
    *("api_key", "API-KEY", "apikey", "client-key", "access_token", "Authorization", "cookie"),
    *("db_", "x-", "_", "-", "=", ":", ": ", " ", "  ", '"', "'", "\\", "\t", "\n", ",", "."),
    *("Bearer ", "basic ", "dXNlcjpwYXNzd29yZA==", "sk-", "sk_live_", "rk_test_", "gsk_"),
    *("AKIA", "ASIA", "AIza", "ghp_", "GHO_", "github_pat_", "xoxb-", "hf_", "fw_", "eyJ"),
    *("-----BEGIN ", "RSA ", "PRIVATE KEY-----", "-----END ", "://", "user", "@", "host"),
    *("abcdEFGH1234", "0123456789ABCDEF", "null", "[x]", "tok_", "zq-9", "session", "_sid"),
]


@settings(max_examples=1500)
@given(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=16),
    st.sampled_from(sorted(PLACEMENTS)),
)
def test_random_texts_of_secret_pieces(pieces: list[str], placement: str) -> None:
    text = "".join(pieces)
    check(R, PLACEMENTS[placement](text))
    check(CUSTOM, PLACEMENTS[placement](text))
    check(R, {text: {"v": 1}})  # a text as a key: the key gate
