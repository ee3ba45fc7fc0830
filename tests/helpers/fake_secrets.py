"""A generated corpus of fake secrets, every kind the redactor scrubs, several samples each.

Nothing here is a real key: every sample is made from a seeded RNG and carries ``FAKE``
(or ``fake``) in its body, yet has the shape its scanner looks for. A sample is
``Sample(kind, text, secrets)``: ``text`` is what gets planted (the secret with the words
that give it away, e.g. ``db_password=...``), ``secrets`` the parts that must never reach
a file.
"""

from __future__ import annotations

import base64
import contextlib
import json
import random
import string
from dataclasses import dataclass
from typing import Any

from cassette import RecordedError

__all__ = ["LOCATIONS", "NON_SECRETS", "SAMPLES", "Sample", "by_kind", "plant"]

_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_B64 = string.ascii_letters + string.digits + "+/"
_HEX = "0123456789abcdef"


@dataclass(frozen=True)
class Sample:
    kind: str
    text: str
    secrets: tuple[str, ...]


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _token(kind: str, rng: random.Random) -> Sample:
    """A sample whose whole text is the secret."""
    a, u = _ALNUM, _UPPER
    made = {
        "openai": lambda: "sk-proj-FAKE" + _r(rng, a + "_-", 40),
        "openai_legacy": lambda: "sk-FAKE" + _r(rng, a, 44),
        "anthropic": lambda: "sk-ant-api03-FAKE" + _r(rng, a + "_-", 60),
        "openrouter": lambda: "sk-or-v1-fake" + _r(rng, _HEX, 56),
        "aws_key_id": lambda: "AKIAFAKE" + _r(rng, u, 12),
        "aws_sts_id": lambda: "ASIAFAKE" + _r(rng, u, 12),
        "google": lambda: "AIzaFAKE" + _r(rng, a + "_-", 31),
        "github": lambda: rng.choice("pousr").join(("gh", "_FAKE")) + _r(rng, a, 32),
        "github_pat": lambda: "github_pat_11FAKE" + _r(rng, a + "_", 66),
        "slack": lambda: "xoxb-FAKE-" + _r(rng, string.digits, 12) + "-" + _r(rng, a, 24),
        "huggingface": lambda: "hf_FAKE" + _r(rng, a, 30),
        "fireworks": lambda: "fw_FAKE" + _r(rng, a, 20),
        "groq": lambda: "gsk_FAKE" + _r(rng, a, 48),
        "stripe_live": lambda: "sk_live_FAKE" + _r(rng, a, 24),
        "stripe_restricted": lambda: "rk_live_FAKE" + _r(rng, a, 24),
        "stripe_test": lambda: "sk_test_FAKE" + _r(rng, a, 24),
        "jwt": lambda: "eyJhbGciOiJIUzI1NiJ9.eyJ" + _r(rng, a, 30) + "." + _r(rng, a + "_-", 43),
    }[kind]()
    return Sample(kind, made, (made,))


def _context(kind: str, rng: random.Random, i: int) -> Sample:
    """A sample whose secret is given away by the words around it."""
    if kind == "bearer":
        tok = "FAKE" + _r(rng, _ALNUM + "._-", 28)
        return Sample(kind, ("Bearer ", "bearer ", "Authorization: Bearer ")[i % 3] + tok, (tok,))
    if kind == "basic":
        user, pw = "fakeuser" + _r(rng, _ALNUM, 4), "FAKEpw" + _r(rng, _ALNUM, 12)
        cred = base64.b64encode(f"{user}:{pw}".encode()).decode()
        return Sample(kind, ("Basic ", "basic ", "Authorization: Basic ")[i % 3] + cred, (cred,))
    if kind == "pem":
        label = ("RSA ", "", "EC ", "OPENSSH ", "ENCRYPTED ")[i % 5]
        lines = ["FAKE" + _r(rng, _B64, 60)] + [_r(rng, _B64, 64) for _ in range(3)]
        body = "\n".join(lines)
        text = f"-----BEGIN {label}PRIVATE KEY-----\n{body}\n-----END {label}PRIVATE KEY-----"
        return Sample(kind, text, tuple(lines))
    if kind == "url_password":
        pw = "FAKEpw" + _r(rng, _ALNUM + "!$%*", 12)
        scheme = ("postgres", "mysql", "redis", "amqp", "https", "mongodb+srv")[i % 6]
        user = "" if scheme == "redis" else "admin"
        return Sample(kind, f"{scheme}://{user}:{pw}@db.example.internal:5432/app", (pw,))
    if kind == "aws_secret":
        key = "FAKE" + _r(rng, _B64, 36)
        form = (
            "aws_secret_access_key={}",
            "AWS_SECRET_ACCESS_KEY = {}",
            'aws_secret_access_key: "{}"',
            '{{"aws_secret_access_key": "{}"}}',
            "export AWS_SECRET_ACCESS_KEY={}",
        )[i % 5]
        return Sample(kind, form.format(key), (key,))
    if kind == "hex_token":
        tok = "fa4e" + _r(rng, _HEX, (40, 60, 28, 44, 36)[i % 5])
        form = ("token={}", "api_key: {}", '"secret": "{}"', "?access_token={}&x=1", "TOKEN={}")
        return Sample(kind, form[i % 5].format(tok), (tok,))
    if kind == "named_value":
        val = "FAKE" + _r(rng, _ALNUM + "-_.!", 14)
        form = (
            "db_password={}",
            "DB_PASSWORD: {}",
            "client_secret={}",
            "X-Custom-Token: {}",
            "x-api-key: {}",
            "password: {}",
            "stripe_secret_key={}",
        )[i % 7]
        return Sample(kind, form.format(val), (val,))
    if kind == "json_argument":  # tool-call arguments: JSON in a string
        val = "FAKE" + _r(rng, _ALNUM + " -_.!", 14)
        key = ("password", "db_password", "api_key", "secret", "auth_token", "passphrase")[i % 6]
        spacing = ('{{"{}": "{}"}}', '{{"{}":"{}"}}', '{{"user": "bob", "{}": "{}", "n": 1}}')
        return Sample(kind, spacing[i % 3].format(key, val), (val,))
    return _unmarked(kind, rng, i)


def _unmarked(kind: str, rng: random.Random, i: int) -> Sample:
    """A secret with no mark of its own, written in text: only the words near it tell."""
    if kind == "aws_secret_text":
        key, kid = "FAKE" + _r(rng, _B64, 36), "AKIAFAKE" + _r(rng, _UPPER, 12)
        form = (
            "AWS access key id {1} and secret {0}",
            "creds: {1}:{0}",
            "key pair {0} (id {1}), rotate it monthly",
            "aws: {0}",
            "Here is the secret for the bucket, {0}, keep it",
        )[i % 5]
        return Sample(kind, form.format(key, kid), (key, kid))
    if kind == "password_text":
        pw = "FAKEpw" + _r(rng, _ALNUM + "!#%^*", 9) + rng.choice(string.digits)
        form = (
            "my password is {}",
            "The password for admin is {}.",
            "mysql -u root --password={} app",
            "login with user bob and password {}",
            "pwd => {}",
        )[i % 5]
        return Sample(kind, form.format(pw), (pw,))
    if kind == "basic_text":
        user, pw = "fakeuser" + _r(rng, _ALNUM, 4), "FAKEpw" + _r(rng, _ALNUM, 12)
        cred = base64.b64encode(f"{user}:{pw}".encode()).decode()
        form = (
            "the header was Authorization: Basic {} and it worked",
            "curl -H 'Proxy-Authorization:Basic {}' https://api.example.com",
            "GET /?auth=Basic%20{} HTTP/1.1",
            "scheme=basic:{}",
            "BASIC\t{}",
        )[i % 5]
        return Sample(kind, form.format(cred), (cred,))
    if kind == "hex32_text":
        tok = "fa4e" + _r(rng, _HEX, 28)
        form = (
            "token {}",
            "My API key is {}, please use it",
            "{} is my access key",
            "deploy --auth {} --region eu",
            "the bearer credential: {}",
        )[i % 5]
        return Sample(kind, form.format(tok), (tok,))
    raise ValueError(kind)


TOKEN_KINDS = (
    "openai", "openai_legacy", "anthropic", "openrouter", "aws_key_id", "aws_sts_id", "google",
    "github", "github_pat", "slack", "huggingface", "fireworks", "groq", "stripe_live",
    "stripe_restricted", "stripe_test", "jwt",
)  # fmt: skip
CONTEXT_KINDS = (
    "bearer", "basic", "pem", "url_password", "aws_secret", "hex_token", "named_value",
    "json_argument", "aws_secret_text", "password_text", "basic_text", "hex32_text",
)  # fmt: skip


def _corpus(per_kind: int = 5, seed: int = 12) -> list[Sample]:
    rng = random.Random(seed)
    out = [_token(kind, rng) for kind in TOKEN_KINDS for _ in range(per_kind)]
    out += [_context(kind, rng, i) for kind in CONTEXT_KINDS for i in range(per_kind)]
    return out


SAMPLES: list[Sample] = _corpus()


def by_kind() -> dict[str, list[Sample]]:
    kinds: dict[str, list[Sample]] = {}
    for sample in SAMPLES:
        kinds.setdefault(sample.kind, []).append(sample)
    return kinds


# what must come through untouched: ids, hashes, prose that merely mentions secrets
NON_SECRETS: tuple[str, ...] = (
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",  # sha256 of b""
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "call_abc123XYZ456def789",
    "chatcmpl-AbC123dEf456GhI789jKl012",
    "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "fp_scripted",
    "The basic idea is simple: ask, then verify before changing anything.",
    "Password reset instructions were sent to your email.",
    "max_tokens: 1024",
    "Use the token budget wisely; the key is patience.",
    "https://example.com/path?q=1&page=2",
    "git@github.com:org/repo.git",
    "task-0123456789abcdefghij-klmnop",
    "user@example.com wrote: see http://example.com:8080/x",
    "basic understanding",
    "a_b-c tool_call_id toolu_01ABCDEF",
)


# --- the planted set: every sample in every place a line can hold text --------------------

Json = dict[str, Any]


def _request(where: str, text: str) -> Json:
    msgs: list[Json] = [{"role": "system", "content": "You are a helpful agent."},
                        {"role": "user", "content": "Go on."}]  # fmt: skip
    call = {"id": "call_1", "type": "function", "function": {"name": "save", "arguments": "{}"}}
    request: Json = {"model": "m", "messages": msgs}
    if where == "system prompt":
        msgs[0]["content"] = f"You are an agent. {text}"
    elif where == "user message":
        msgs[1]["content"] = f"Please remember this: {text}"
    elif where == "assistant content (history)":
        msgs.append({"role": "assistant", "content": f"Noted: {text}"})
    elif where == "tool-call arguments (history)":
        call["function"]["arguments"] = json.dumps({"note": text})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
    elif where == "tool result":
        result = {"role": "tool", "tool_call_id": "call_1", "content": f"saved: {text}"}
        msgs += [{"role": "assistant", "content": None, "tool_calls": [call]}, result]
    elif where == "request body field":
        request["user"] = text
    elif where == "dict key":
        request["metadata"] = {text: "a secret as a key"}
    elif where == "request header":
        request["extra_headers"] = {"X-Note": text}
    return request


def _response(where: str, text: str) -> Json:
    message: Json = {"role": "assistant", "content": "ok"}
    if where == "response content":
        message["content"] = f"Sure, here it is: {text}"
    elif where == "response tool-call arguments":
        args = json.dumps({"note": text})
        message["tool_calls"] = [{"id": "call_2", "type": "function",
                                  "function": {"name": "save", "arguments": args}}]  # fmt: skip
    return {"id": "chatcmpl-1", "choices": [{"index": 0, "message": message}]}


def _chunks(text: str) -> list[Json]:
    """``text`` streamed three characters a chunk (so every secret is split)."""
    pieces = [f"Sure: {text} done"[i : i + 3] for i in range(0, len(text) + 11, 3)]
    return [{"id": "chatcmpl-1", "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
            for p in pieces]  # fmt: skip


LOCATIONS = (
    "system prompt", "user message", "assistant content (history)",
    "tool-call arguments (history)", "tool result", "request body field", "dict key",
    "request header", "response content", "response tool-call arguments",
    "stream chunks (split)", "error message", "outcome info", "header meta",
)  # fmt: skip


def plant(cas: Any, env: int, where: str, text: str) -> Json:
    """Make the call of ``cas`` that puts ``text`` at ``where`` (``"header meta"``: none,
    it goes in ``cassette.open(meta=...)``); returns the request, to replay it."""
    request = _request(where, text)
    if where == "stream chunks (split)":
        list(cas.stream(request, live=lambda: iter(_chunks(text)), env_index=env))
    elif where == "error message":

        def fail() -> Json:
            raise RuntimeError(f"upstream said: {text}")

        with contextlib.suppress(RuntimeError, RecordedError):  # (replayed: RecordedError)
            cas.call(request, live=fail, env_index=env)
    elif where != "header meta":
        response = _response(where, text)
        cas.call(request, live=lambda: response, env_index=env)
    if where == "outcome info":
        cas.outcome(env, reward=1.0, info={"log": f"done; {text}"})
    return request
