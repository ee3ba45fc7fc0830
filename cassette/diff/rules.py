"""What a diff leaves out (volatile fields, transport keys, the user's paths), with
JSON-string tool arguments parsed, as one :class:`~cassette.format.paths.Paths`."""

from __future__ import annotations

from collections.abc import Iterable

from ..dataset.inspect import parse_args
from ..format.paths import DEEP, Paths, Token, parse_path
from ..replay.matching import DEFAULT_IGNORE
from ..types import Json

__all__ = ["VOLATILE", "Rules"]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Fields that differ between two recordings of the same behaviour: generated ids, clocks.
VOLATILE = _words(
    """
    request.messages[*].tool_call_id request.messages[*].tool_calls[*].id
    request.input[*].id request.input[*].call_id
    response.id response.created response.created_at response.system_fingerprint
    response._hidden_params response.choices[*].message.tool_calls[*].id
    response.output[*].id response.output[*].call_id response.message.tool_calls[*].id
    response.chunks[*].id response.chunks[*].created response.chunks[*].system_fingerprint
    response.chunks[*].obfuscation response.chunks[*].choices[*].delta.tool_calls[*].id
    response.chunks[*].item_id response.chunks[*].item.id response.chunks[*].item.call_id
    response.chunks[*].response.id response.chunks[*].response.created_at
    """
)
# Never compared at all (listed so that a reader knows).
_NOT_COMPARED = ("meta.latency_ms", "meta.recorded_at", "meta.usage", "outcome.info")
# JSON-string tool arguments, parsed so that a path can go inside them.
_ARGUMENTS = _words(
    """
    request.messages[*].tool_calls[*].function.arguments request.input[*].arguments
    response.choices[*].message.tool_calls[*].function.arguments
    response.message.tool_calls[*].function.arguments response.output[*].arguments
    """
)
_PARTS = frozenset({"request", "response", "error", "outcome", "meta", DEEP})


def _rooted(path: str) -> tuple[Token, ...]:
    tokens = parse_path(path)
    return tokens if tokens[0] in _PARTS else ("request", *tokens)


def _by_position(tokens: tuple[Token, ...]) -> bool:
    return DEEP in tokens or any(isinstance(t, int) for t in tokens)


class Rules:
    """What is left out of the comparison: volatile fields, transport keys, user paths
    (from a step's root, ``response.x``; else a request path; ``**.x`` at any depth)."""

    def __init__(self, user: Iterable[str] = ()) -> None:
        self.user = list(filter(None, user))
        self.paths = Paths((*VOLATILE, *(f"request.{key}" for key in DEFAULT_IGNORE)))
        for path in _ARGUMENTS:
            self.paths.add(parse_path(path), parse_args)
        tokens = [t for t in map(_rooted, self.user) if t[0] != "meta"]
        for t in tokens:
            self.paths.add(t)
        # stored delta parts compare alike unless a path reaches into messages by index
        self.by_delta = not any(map(_by_position, tokens))

    def listed(self) -> list[str]:
        return [*VOLATILE, *_NOT_COMPARED, *self.user]

    def norm(self, wrapper: Json) -> Json:
        out: Json = self.paths.apply(wrapper)
        return out

    def same(self, a: Json, b: Json) -> bool:
        """Whether two steps' parts (``{"response": ..., "error": ...}``) are equal, normalised."""
        return self.paths.same(a, b)
