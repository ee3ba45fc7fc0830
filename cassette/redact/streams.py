"""Scrubbing a recorded stream: a secret split across chunks (``"sk-pr"`` | ``"oj-..."``,
``"Bearer"`` | ``" <token>"``) is found in the text the chunks make together.

Each string field of the chunks belongs to one *text stream*, named by where it stands:
its path, list items named by their ``index`` (chat choices and tool calls), and the
chunk's own ``type``, ``item_id``, ``output_index``, ``content_index`` and ``index``
(Responses API events, Anthropic content blocks). A stream's pieces are joined, scrubbed
as one text, and written back at the original boundaries: the replacement goes in the
chunk where the secret starts, and the rest of the secret is cut from the chunks it
spans (a chunk wholly inside a secret keeps an empty string). So the chunks keep their
number and order, and each stream's pieces join to the scrubbed text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["is_token_list", "scrub_chunks"]

Path = tuple[Any, ...]
Spans = Callable[[str], list[tuple[int, int]]]
_IDS = ("type", "item_id", "output_index", "content_index", "index")


def _leaves(node: Any, path: Path, name: Path, at: int, out: dict[Path, list[Any]]) -> None:
    """Add every non-empty string under ``node`` to its stream (``out[name]``)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if type(v) is str:
                if v:
                    out.setdefault((*name, k), []).append((at, (*path, k), v))
            elif isinstance(v, (dict, list)):
                _leaves(v, (*path, k), (*name, k), at, out)
    else:
        for i, v in enumerate(node):
            if type(v) is str:
                if v:
                    out.setdefault((*name, i), []).append((at, (*path, i), v))
            elif isinstance(v, dict):
                ident = v.get("index")
                if type(ident) is int:
                    step: Any = ("#", ident)
                elif type(v.get("token")) is str and name[-1:] != ("top_logprobs",):
                    step = "*"  # logprobs: the tokens of a text, however many a chunk
                else:
                    step = i
                _leaves(v, (*path, i), (*name, step), at, out)
            elif isinstance(v, list):
                _leaves(v, (*path, i), (*name, i), at, out)


def _streams(chunks: list[Any]) -> dict[Path, list[Any]]:
    out: dict[Path, list[Any]] = {}
    for at, chunk in enumerate(chunks):
        if not isinstance(chunk, dict):
            continue
        ids = tuple(
            (k, v) for k in _IDS if isinstance(v := chunk.get(k), (str, int)) and k in chunk
        )
        _leaves(chunk, (), ids, at, out)
    return out


def _cut(texts: list[str], spans: list[tuple[int, int]], replacement: str) -> list[str]:
    """``texts`` with each span of their join replaced, at the original boundaries."""
    out: list[str] = []
    a = 0
    k = 0
    for text in texts:
        b = a + len(text)
        while k < len(spans) and spans[k][1] <= a:
            k += 1
        parts: list[str] = []
        pos = a
        j = k
        while j < len(spans) and spans[j][0] < b:
            s, e = spans[j]
            if e > a:
                parts.append(text[pos - a : max(s, a) - a])
                if s >= a:
                    parts.append(replacement)
                pos = min(e, b)
            j += 1
        parts.append(text[pos - a :])
        out.append("".join(parts) if len(parts) > 1 else text)
        a = b
    return out


def _set(node: Any, path: Path, value: str) -> Any:
    if not path:
        return value
    copy: Any = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _set(node[path[0]], path[1:], value)
    if path == ("token",) and isinstance(copy.get("bytes"), list):
        copy["bytes"] = list(value.encode())  # a logprob's bytes spell its token
    return copy


def is_token_list(value: list[Any]) -> bool:
    """Whether ``value`` is a list of logprobs (dicts with a ``token``)."""
    return bool(value) and isinstance(value[0], dict) and type(value[0].get("token")) is str


def scrub_chunks(
    chunks: list[Any],
    spans: Spans,
    replacement: str,
    tail: Callable[[str], tuple[int, int] | None] | None = None,
) -> tuple[list[Any], int]:
    """(chunks with every secret of every text stream replaced, secrets found). Chunks
    that change are copied along the changed path; the others are shared. ``tail``: the
    stream was cut short; it finds a secret cut off at the end of a stream's text."""
    out: list[Any] | None = None
    count = 0
    for pieces in _streams(chunks).values():
        texts = [text for _, _, text in pieces]
        if tail is None:
            if len(pieces) < 2:
                continue  # one piece: scrubbed where it stands, with the rest of the line
            if all(t == texts[0] for t in texts):
                continue  # a field every chunk repeats (id, model, object)
        joined = "".join(texts)
        found = spans(joined)
        cut = tail(joined) if tail is not None else None
        if cut is not None and (not found or found[-1][1] <= cut[0]):
            found.append(cut)
        elif cut is not None and found[-1][1] < cut[1]:
            found[-1] = (found[-1][0], cut[1])
        if not found:
            continue
        count += len(found)
        if out is None:
            out = list(chunks)
        for (at, path, old), new in zip(pieces, _cut(texts, found, replacement), strict=True):
            if new != old:
                out[at] = _set(out[at], path, new)
    return (chunks, 0) if out is None else (out, count)
