"""Record and replay the anthropic SDK: ``wrap_anthropic(client, cas)``.

.. code-block:: python

    import cassette
    from anthropic import Anthropic
    from cassette.adapters.anthropic import wrap_anthropic

    with cassette.open("runs/a.jsonl", mode="auto") as cas:
        client = wrap_anthropic(Anthropic(), cas)       # still an anthropic.Anthropic
        with cassette.episode(0):
            reply = client.messages.create(model="claude-sonnet-4-5", max_tokens=512,
                                           messages=[{"role": "user", "content": "Hi"}])

The wrapped client is a copy (``client.with_options()``); the client passed in is left as
it was. Every request the SDK sends goes through the cassette, on channel ``"llm"`` of the
current :func:`cassette.episode`, as a request dict: the JSON body the SDK sends, the
``anthropic-beta`` header when set (as ``"$anthropic-beta"``), and ``"endpoint"``
(``"messages"``, ``"messages.count_tokens"``, ``"GET models"``; never host, API key,
headers or timeout). It is caught in the client's ``request``, where the SDK turns options
into an HTTP request (:mod:`cassette.adapters.anthropic._http`), so ``messages.create``
(streamed or not), ``messages.stream()`` and its helpers (``text_stream``,
``get_final_message``), ``with_raw_response``, ``with_streaming_response``, ``beta``,
``count_tokens``, pages and ``client.post`` all record, and replay as the SDK's own
objects. API errors replay as the same ``anthropic`` exception. File uploads and raw
bodies raise :class:`cassette.CassetteError` in every mode.
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

try:
    from anthropic import Anthropic, AsyncAnthropic
except ImportError:  # exercised in an environment without anthropic
    raise ImportError(
        "cassette.adapters.anthropic needs anthropic: pip install 'rollout-cassette[anthropic]'"
    ) from None

from ...replay.cassette import Cassette
from .._common.http_recorder import RECORDER
from ._http import AnthropicErrors, Recorder, assemble_message, options_request

__all__ = ["AnthropicErrors", "assemble_message", "is_wrapped", "options_request", "wrap_anthropic"]

ClientT = TypeVar("ClientT", bound="Anthropic | AsyncAnthropic")


def is_wrapped(client: Any) -> bool:
    """Whether ``client`` is a client that :func:`wrap_anthropic` returned."""
    return RECORDER in vars(client)


def wrap_anthropic(client: ClientT, cas: Cassette, *, channel: str = "llm") -> ClientT:
    """A copy of ``client`` (an ``Anthropic`` or ``AsyncAnthropic``, and still one) whose
    every request goes through ``cas``; ``client`` itself is left unchanged. Copies made
    with ``with_options`` / ``copy`` go through ``cas`` too."""
    if not isinstance(client, (Anthropic, AsyncAnthropic)):
        raise TypeError(
            f"wrap_anthropic takes an anthropic.Anthropic or AsyncAnthropic, not {client!r}"
        )
    copy_of: Any = type(client).copy  # the class's copy: a wrapped client copies unwrapped
    wrapped = copy_of(client)
    Recorder(wrapped, cas, channel).attach(isinstance(wrapped, AsyncAnthropic), wrap_anthropic)
    return cast(ClientT, wrapped)
