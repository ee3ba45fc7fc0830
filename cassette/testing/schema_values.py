"""Values that fit a JSON schema (``$ref``, ``anyOf``/``oneOf``/``allOf``, enums, formats,
bounds, arrays, objects), for the scripted server's tool calls and structured answers."""

from __future__ import annotations

import itertools
import json
import re
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from ..types import Json

__all__ = ["find_schema", "json_answer", "requested_json", "schema_value", "tool_arguments"]

_MAX_DEPTH = 8
_FORMATS = {
    "date-time": "2024-05-06T07:08:09Z", "date": "2024-05-06", "time": "07:08:09",
    "duration": "P1D", "email": "agent@example.com", "uri": "https://example.com/",
    "url": "https://example.com/", "uuid": "12345678-1234-5678-1234-567812345678",
    "ipv4": "127.0.0.1", "ipv6": "::1", "hostname": "example.com",
}  # fmt: skip
# JSON-schema keys that only a schema (not an ordinary JSON answer) has at its top level
_SCHEMA_KEYS = ("properties", "$defs", "definitions", "anyOf", "oneOf", "allOf", "$ref")


def _free(text: str, rnd: bool) -> str:
    return f"{text} {secrets.token_hex(3)}" if rnd else text


def _pointer(root: Json, ref: str) -> Any:
    """What the JSON pointer ``#/a/b`` names in ``root`` (None: nothing)."""
    target: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        target = target.get(part) if isinstance(target, dict) else None
    return target


def _resolve(schema: Json, root: Json) -> Json:
    """``schema`` with a local ``$ref`` replaced by its target (sibling keys kept)."""
    for _ in range(32):
        ref = schema.get("$ref")
        target = _pointer(root, ref) if isinstance(ref, str) and ref.startswith("#") else None
        if not isinstance(target, dict):
            break
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _merge(parts: Iterable[Any], root: Json) -> Json:
    merged: Json = {}
    for part in parts:
        if isinstance(part, dict):
            part = _resolve(part, root)
            props = {**merged.get("properties", {}), **part.get("properties", {})}
            required = [*merged.get("required", []), *part.get("required", [])]
            merged.update(part)
            if props:
                merged["properties"] = props
            if required:
                merged["required"] = list(dict.fromkeys(required))
    return merged


def schema_value(
    schema: Any, text: str, rnd: bool = False, *, root: Json | None = None, depth: int = 0
) -> Any:
    """A value that validates against ``schema``: strings from ``text``, at random with ``rnd``."""
    return _Walk(text, rnd, schema if root is None else root).value(schema, depth)


_NONE = object()  # no fixed value


def _fixed(schema: Json, rnd: bool) -> Any:
    """The value ``const``, ``enum`` or (outside random mode) ``default`` names, else _NONE."""
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    return schema["default"] if "default" in schema and not rnd else _NONE


def _kind(schema: Json) -> str:
    """The type to build: the first of a list that is not null, else guessed from the keys."""
    kind = schema.get("type")
    if isinstance(kind, list):
        return next((str(k) for k in kind if k != "null"), "null")
    if kind is None:
        return "object" if "properties" in schema else "array" if "items" in schema else "string"
    return str(kind)


class _Walk:
    """The values of a schema and its parts (a recursive schema stops at a depth)."""

    def __init__(self, text: str, rnd: bool, root: Any) -> None:
        self.text, self.rnd, self.root = text, rnd, root

    def value(self, schema: Any, depth: int) -> Any:
        if not isinstance(schema, dict):
            return _free(self.text, self.rnd)
        if depth > 4 * _MAX_DEPTH:
            return None
        schema = _resolve(schema, self.root)
        fixed = _fixed(schema, self.rnd)
        fixed = self.combined(schema, depth) if fixed is _NONE else fixed
        if fixed is not _NONE:
            return fixed
        return _MAKERS.get(_kind(schema), _Walk.string)(self, schema, depth)

    def integer(self, schema: Json, _depth: int) -> int | float:
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1)
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 10) - 1)
        low, high = int(-(-low // 1)), int(high // 1)  # whole numbers inside the bounds
        if high < low:  # a range holding no whole number, e.g. 0.1 < x < 0.2
            return float(schema.get("minimum") or schema.get("exclusiveMinimum") or 0) + 1e-9
        span = high - low + 1
        return low + (secrets.randbelow(span) if self.rnd else len(self.text) % span)

    def boolean(self, _schema: Json, _depth: int) -> bool:
        return secrets.randbelow(2) == 1 if self.rnd else True

    def null(self, _schema: Json, _depth: int) -> None:
        return None

    def string(self, schema: Json, _depth: int) -> str:
        value = _FORMATS.get(str(schema.get("format"))) or _free(self.text, self.rnd)
        low, high = int(schema.get("minLength", 0)), schema.get("maxLength")
        value = value if high is None else value[: int(high)]
        return value + "x" * (low - len(value))

    def combined(self, schema: Json, depth: int) -> Any:
        """anyOf / oneOf: the first option not null; allOf: the parts merged; else _NONE."""
        for key in ("anyOf", "oneOf"):
            if isinstance(options := schema.get(key), list) and options:
                return self.option(options, depth)
        if isinstance(schema.get("allOf"), list):
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            return self.value(_merge([rest, *schema["allOf"]], self.root), depth + 1)
        return _NONE

    def option(self, options: list[Any], depth: int) -> Any:
        real = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        deep = depth >= _MAX_DEPTH // 2 and len(real) < len(options)  # recursion: stop
        return self.value(real[0], depth + 1) if real and not deep else None

    def array(self, schema: Json, depth: int) -> list[Any]:
        if isinstance(schema.get("prefixItems"), list):
            return [self.value(item, depth + 1) for item in schema["prefixItems"]]
        if depth >= _MAX_DEPTH:
            return []
        size = max(1, int(schema.get("minItems", 0)))
        size = min(size, int(schema.get("maxItems", size)))
        return [self.value(schema.get("items"), depth + 1) for _ in range(size)]

    def object(self, schema: Json, depth: int) -> Json:
        props: Json = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
        required = list(schema.get("required") or [])
        names = required if required or depth >= _MAX_DEPTH else list(props)[:1]
        return {name: self.value(props.get(name), depth + 1) for name in names}


_MAKERS: dict[str, Callable[[_Walk, Json, int], Any]] = {
    "integer": _Walk.integer, "number": _Walk.integer, "boolean": _Walk.boolean,
    "null": _Walk.null, "array": _Walk.array, "object": _Walk.object,
}  # fmt: skip


def tool_arguments(schema: Any, text: str, rnd: bool = False) -> Json:
    """Arguments for a tool: its required properties, or ``{"query": text}`` without a schema."""
    if isinstance(schema, dict) and any(k in schema for k in _SCHEMA_KEYS):  # properties too
        value = schema_value(schema, text, rnd)
        if isinstance(value, dict):
            return value
    return {"query": _free(text, rnd)}


def find_schema(texts: Iterable[str]) -> Json | None:
    """The first JSON schema written in ``texts`` (as instructor's JSON mode sends one)."""
    decoder = json.JSONDecoder()
    for text in texts:
        for brace in itertools.islice(re.finditer("{", text), 200):
            try:
                found = decoder.raw_decode(text, brace.start())[0]
            except ValueError:
                continue
            if isinstance(found, dict) and any(k in found for k in _SCHEMA_KEYS):
                return found
    return None


def requested_json(body: Json) -> tuple[bool, Json | None]:
    """Whether a request asks for JSON (chat ``response_format``, Responses ``text.format``),
    and the schema it names (None for ``json_object``)."""
    fmt = body.get("response_format") or (body.get("text") or {}).get("format")
    if not isinstance(fmt, dict):
        return False, None
    if fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema", fmt).get("schema")  # chat nests it; Responses does not
        return True, schema if isinstance(schema, dict) else {"type": "object"}
    return fmt.get("type") == "json_object", None


def json_answer(schema: Json | None, texts: list[str], text: str, rnd: bool = False) -> str:
    """JSON fitting ``schema`` (else one written in ``texts``), or ``{"answer": text}``."""
    schema = schema if schema is not None else find_schema(texts)
    value = {"answer": _free(text, rnd)} if schema is None else schema_value(schema, text, rnd)
    return json.dumps(value)
