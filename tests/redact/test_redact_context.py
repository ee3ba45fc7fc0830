"""Secrets with no mark of their own, found by the words around them: a value after a
credential keyword in every form it is written in, Basic credentials, AWS secret keys
near their id; what only mentions a keyword is kept; a user's keywords and allow-list;
the header records them; and the benign corpus (fixtures/benign_corpus.py) stays
nearly untouched, every git SHA, UUID and digest in it kept."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest

import cassette
from cassette.format.codec import dumps
from cassette.redact import REDACTED, Redactor
from fixtures.benign_corpus import build

R = Redactor()
PW = "FAKEq7#Lm2x9"  # a password
HEX = "fa4e0c9d1b2a3f4e5d6c7b8a90817263"  # a generic 32-hex token
AWS_KEY = "FAKEwJalrXUtnFEMI/K7MDENG+bPxRfiCYzzKEY1"  # 40 characters
AWS_ID = "AKIAFAKE2345ABCD6789"
BASIC = base64.b64encode(b"fakeuser:FAKEpw-9x").decode()

WRITTEN = {  # each form a secret is written in, with the secret in it
    "assignment": f"db_password={PW}",
    "spaced assignment": f"PASSWORD = '{PW}'",
    "env": f"export DB_PASS={PW}",
    "key-value": f"Password: {PW}",
    "yaml": f"database:\n  password: {PW}\n  host: db",
    "json": json.dumps({"user": "bob", "password": PW}),
    "json in a string": json.dumps(json.dumps({"api_key": HEX})),
    "url query": f"https://api.example.com/v1/items?page=2&api_key={HEX}&q=x",
    "cli flag": f"mysql -u root --password {PW} app",
    "cli flag =": f"deploy --auth-token={HEX}",
    "prose": f"my password is {PW}, please keep it",
    "prose for": f"The password for admin is {PW}.",
    "prose after": f"{HEX} is my access key",
    "keyword then value": f"token {HEX}",
    "api key with a space": f"Your API key: {HEX}",
    "secret": f"client secret => {PW}",
    "credential": f"credentials: {PW}",
    "bearer": f"auth bearer {HEX}",
    "basic": f"sent Authorization: Basic {BASIC} to the proxy",
    "basic url-encoded": f"GET /x?h=Basic%20{BASIC}",
    "aws after its id": f"id {AWS_ID}, key {AWS_KEY}",
    "aws before its id": f"{AWS_KEY} goes with {AWS_ID}",
    "aws after a word": f"the AWS one: {AWS_KEY}",
    "a word, quoted": 'password = "letmein"',
    "a word in json": json.dumps({"db_password": "letmein"}),
    "a word after name=": "DB_PASSWORD=letmein",
}
SECRET_OF = {PW: "password", HEX: "hex", AWS_KEY: "aws", BASIC: "basic", "letmein": "word"}


@pytest.mark.parametrize("form", sorted(WRITTEN))
def test_a_secret_is_found_in_every_form_it_is_written_in(form: str) -> None:
    text = WRITTEN[form]
    out, count = R.redact_text(text)
    assert count >= 1 and REDACTED in out, (form, out)
    assert not [s for s in SECRET_OF if s in out], (form, out)
    line = {"type": "interaction", "request": {"messages": [{"content": text}]}}
    assert R.hits(dumps(line))  # the line gates let it through
    clean, _ = R.redact_line(line, dumps(line), dumps)
    assert not [s for s in SECRET_OF if s in dumps(clean).decode()], form


KEPT = (
    "the token limit is 4096, so the reply was cut",
    "Set OPENAI_API_KEY in your environment and run it again.",
    "password = getpass.getpass()",
    "token = self._token",
    "api_key: Optional[str] = None",
    "password: bytes | str",
    "password = value",
    "f(password=password, token=token_value)",
    'export API_KEY="your-api-key"',
    "password: ********",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "Authentication failed: check that the token has not expired.",
    "The secret sauce is caching the tokenizer.",
    "Basic understanding of auth is enough.",
    "commit 3f2a1bc8e4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9 fix token refresh",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 token.json",
    "request 9b2f6a1e-3c4d-4e5f-8a9b-0c1d2e3f4a5b: auth ok",
    "key 3f2a1bc8e4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9 in the cache",
    "AKIAFAKE2345ABCD6789 with commit 3f2a1bc8e4d5f6a7b8c9d0e1f2a3b4c5d6e7f8a9",
)


@pytest.mark.parametrize("text", KEPT)
def test_what_only_mentions_a_keyword_is_kept(text: str) -> None:
    out, _ = R.redact_text(text)
    for word in re.findall(r"[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f-]{36}", text):
        assert word in out  # SHAs, digests and UUIDs always survive
    if "AKIA" not in text:
        assert out == text


def test_a_long_hex_or_base64_token_alone_is_kept() -> None:
    for text in (HEX, f"id: {HEX}", AWS_KEY, f"value {AWS_KEY} here", "x" * 40):
        assert R.redact_text(text) == (text, 0), text


def test_user_keywords_and_the_allow_list() -> None:
    mine = Redactor(
        extra_keywords=["pin", "session id"], allow=["FAKE-ok-1234", re.compile(r"test-\d+x")]
    )
    assert mine.redact_text("pin=8812ab")[0] == f"pin={REDACTED}"
    assert mine.redact_text("my session id is s3ss10n-9x")[0] == f"my session id is {REDACTED}"
    assert mine.redact_text('{"SESSION_ID": "abcd-1234"}')[0] == f'{{"SESSION_ID": "{REDACTED}"}}'
    assert R.redact_text("pin=8812ab") == ("pin=8812ab", 0)  # not a default keyword
    for allowed in ("password: FAKE-ok-1234", "token=test-42x"):
        assert mine.redact_text(allowed) == (allowed, 0)
    assert mine.redact_text("token=test-42y")[1] == 1  # the whole value must match
    assert mine.redact({"api_key": "FAKE-ok-1234"}) == ({"api_key": "FAKE-ok-1234"}, 0)
    assert mine.redact({"api_key": "other"}) == ({"api_key": REDACTED}, 1)
    once = Redactor(extra_keywords=iter(["pin"]), allow=iter(["4711abc"]))  # iterators too
    assert once.redact_text("pin: 4711abc") == ("pin: 4711abc", 0)
    assert once.redact_text("pin: 4712abc")[1] == 1
    assert once.described() == {"keywords": ["pin"], "allowed": 1}


def test_the_header_records_what_a_user_changed(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    mine = Redactor(extra_keywords=["pin"], extra_patterns=[r"tok_[a-z]{6}"], allow=["x-1"])
    with cassette.open(path, "record", redact=mine) as cas:
        cas.call({"q": "my pin is 4711ab"}, live=lambda: {"ok": 1})
    header, line = (json.loads(x) for x in path.read_text().splitlines())
    assert header["meta"]["redact"] == {
        "patterns": [r"tok_[a-z]{6}"], "keywords": ["pin"], "allowed": 1
    }  # fmt: skip
    assert "4711ab" not in json.dumps(line)
    with cassette.open(tmp_path / "b.jsonl", "record") as cas:  # the defaults: nothing
        cas.call({"q": 1}, live=lambda: {"ok": 1})
    assert "redact" not in json.loads((tmp_path / "b.jsonl").read_text().splitlines()[0])["meta"]
    dropped = Redactor(patterns=(), hook=lambda line: None).described()
    assert dropped == {"hook": True, "dropped": ["patterns"]}


def test_the_benign_corpus_is_nearly_untouched_and_keeps_every_identifier() -> None:
    corpus = build(transcripts=1400, tau2_rows=60, files_each=4)  # a subset of the bench's
    assert len(corpus) >= 3000
    changed = 0
    for message in corpus:
        out, count = R.redact({"role": message.role, "content": message.text})
        changed += count > 0
        for kept in message.keep:
            assert kept in out["content"], (message.source, kept)
    assert sum(len(m.keep) for m in corpus) > 1000
    assert changed / len(corpus) <= 0.005, changed


def test_secrets_around_a_base64_image_are_found_and_the_image_is_kept() -> None:
    from tests.helpers.fake_secrets import SAMPLES

    blob = base64.b64encode(bytes(range(256)) * 40).decode()  # 13,656 characters
    for sample in SAMPLES:
        text = f"{sample.text}\nscreenshot: data:image/png;base64,{blob}\nagain: {sample.text}"
        out, count = R.redact_text(text)
        assert count >= 2 and blob in out, sample.kind
        assert not [s for s in sample.secrets if s in out], sample.kind
