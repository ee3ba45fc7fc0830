"""The types every layer shares: a JSON object, and the key of an episode."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]
"""A JSON object as the codec decodes it: a request, a response, a line."""

EnvIndex = int | str
"""An episode's key in a cassette: an int, or a name."""

__all__ = ["EnvIndex", "Json"]
