"""``cassette serve``: an OpenAI- and Anthropic-compatible HTTP server that records and
replays through one cassette, so agents in any language (Node, Go, a binary) get what
the Python wrappers give: ``POST /v1/chat/completions``, ``/v1/completions``,
``/v1/responses``, ``/v1/embeddings``, ``/v1/messages`` and ``GET /v1/models``, plain and
streamed. Its request dicts are the wrappers', so the cassettes are interchangeable."""

from __future__ import annotations

from .app import create_app
from .requests import BadRequest, Call, parse_call
from .upstream import Upstream, UpstreamError

__all__ = ["BadRequest", "Call", "Upstream", "UpstreamError", "create_app", "parse_call"]
