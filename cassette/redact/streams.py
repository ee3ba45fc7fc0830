"""Scrubbing a recorded stream: a secret split across chunks (``"sk-pr"`` | ``"oj-..."``)
is found in the text the chunks make together. Each string field belongs to one *text
stream*, named by its path (list items by their ``index``) and the chunk's ``type``,
``item_id``, ``output_index``, ``content_index`` and ``index``. A stream's pieces are
joined, scrubbed as one text, and written back at the original boundaries (the
replacement where the secret starts), so the chunks keep their number and order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["is_token_list", "respell", "scrub_chunks"]

Path = tuple[Any, ...]
Spans = Callable[[str], list[tuple[int, int]]]
Tail = Callable[[str], "tuple[int, int] | None"]
_IDS = ("type", "item_id", "output_index", "content_index", "index")


def _step(name: Path, i: int, item: Any) -> Any:
    """How a list item is named in its stream: by its ``index`` (chat choices and tool
    calls), as one of the tokens of a text (logprobs), or by its place."""
    if not isinstance(item, dict):
        return i
    if type(item.get("index")) is int:
        return ("#", item["index"])
    if type(item.get("token")) is str and name[-1:] != ("top_logprobs",):
        return "*"
    return i


def _leaves(node: Any, path: Path, name: Path, at: int, out: dict[Path, list[Any]]) -> None:
    """Add every non-empty string under ``node`` to its stream (``out[name]``)."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for k, v in items:
        if type(v) is str and v:
            out.setdefault((*name, k), []).append((at, (*path, k), v))
        elif isinstance(v, (dict, list)):
            step = k if isinstance(node, dict) else _step(name, k, v)
            _leaves(v, (*path, k), (*name, step), at, out)


def _streams(chunks: list[Any]) -> dict[Path, list[Any]]:
    out: dict[Path, list[Any]] = {}
    for at, chunk in enumerate(chunks):
        if isinstance(chunk, dict):
            ids = tuple((k, chunk[k]) for k in _IDS if isinstance(chunk.get(k), (str, int)))
            _leaves(chunk, (), ids, at, out)
    return out


def _cut(texts: list[str], spans: list[tuple[int, int]], replacement: str) -> list[str]:
    """``texts`` with each span of their join replaced, at the original boundaries."""
    out: list[str] = []
    a = 0
    for text in texts:
        b = a + len(text)
        parts: list[str] = []
        pos = a
        for s, e in spans:
            if s < b and e > a:
                parts += (text[pos - a : max(s, a) - a], replacement if s >= a else "")
                pos = min(e, b)
        out.append("".join(parts) + text[pos - a :])
        a = b
    return out


def _set(node: Any, path: Path, value: str) -> Any:
    if not path:
        return value
    copy: Any = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _set(node[path[0]], path[1:], value)
    if path == ("token",):
        respell(copy)
    return copy


def respell(logprob: dict[str, Any]) -> None:
    """A logprob's ``bytes`` spell its ``token``: set them anew after the token changed."""
    if type(logprob.get("token")) is str and isinstance(logprob.get("bytes"), list):
        logprob["bytes"] = list(logprob["token"].encode())


def is_token_list(value: list[Any]) -> bool:
    """Whether ``value`` is a list of logprobs (dicts with a ``token``)."""
    return bool(value) and isinstance(value[0], dict) and type(value[0].get("token")) is str


def _found(joined: str, spans: Spans, tail: Tail | None) -> list[tuple[int, int]]:
    """The secrets of a stream's text; ``tail``: with the one cut off at its end."""
    found = spans(joined)
    cut = tail(joined) if tail is not None else None
    if cut is None:
        return found
    if not found or found[-1][1] <= cut[0]:
        return [*found, cut]
    return [*found[:-1], (found[-1][0], max(found[-1][1], cut[1]))]


def scrub_chunks(
    chunks: list[Any], spans: Spans, replacement: str, tail: Tail | None = None
) -> tuple[list[Any], int]:
    """(chunks with every secret of every text stream replaced, secrets found); changed
    chunks are copied along the changed path. ``tail``: the stream was cut short, and it
    finds a secret cut off at the end of a stream's text."""
    out = list(chunks)
    streams = _streams(chunks).values()
    count = sum(_scrub(out, pieces, spans, replacement, tail) for pieces in streams)
    return (out, count) if count else (chunks, 0)


def _scrub(
    out: list[Any], pieces: list[Any], spans: Spans, replacement: str, tail: Tail | None
) -> int:
    """Scrub one text stream's ``pieces`` in the chunks ``out``; the secrets found."""
    texts = [text for _, _, text in pieces]
    if tail is None and len(set(texts)) < 2:
        return 0  # one piece (scrubbed with the rest of the line), or a field every chunk
        # repeats (id, model, object)
    found = _found("".join(texts), spans, tail)
    for (at, path, old), new in zip(pieces, _cut(texts, found, replacement), strict=True):
        if new != old:
            out[at] = _set(out[at], path, new)
    return len(found)
