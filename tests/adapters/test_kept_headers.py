"""Which response headers a cassette keeps: one secret predicate for openai, anthropic and
litellm (rate limits are kept even when their names hold a secret word)."""

from __future__ import annotations

from cassette.adapters._common.http import anthropic_kept, openai_kept, secret_header


def test_openai_keeps_request_ids_and_rate_limits_never_secrets() -> None:
    kept = ["x-request-id", "x-ratelimit-remaining-tokens", "openai-processing-ms", "retry-after"]
    assert all(map(openai_kept, [*kept, "content-type"]))
    dropped = ["set-cookie", "openai-organization", "openai-project", "x-api-key", "date"]
    assert not any(map(openai_kept, [*dropped, "authorization", "request-id"]))


def test_anthropic_keeps_request_ids_and_rate_limits_never_secrets() -> None:
    kept = ["request-id", "anthropic-ratelimit-tokens-remaining", "retry-after", "content-type"]
    assert all(map(anthropic_kept, kept))
    dropped = ["anthropic-organization-id", "set-cookie", "x-api-key", "x-session-id", "date"]
    assert not any(map(anthropic_kept, dropped))


def test_a_secret_header_is_one_with_credentials_or_an_account() -> None:
    secrets = ["authorization", "proxy-authorization", "cookie", "set-cookie", "api-key"]
    assert all(map(secret_header, [*secrets, "x-api-key", "openai-organization"]))
    plain = ["x-request-id", "x-ratelimit-remaining-tokens", "anthropic-ratelimit-tokens-reset"]
    assert not any(map(secret_header, [*plain, "retry-after", "content-type"]))
