"""The JSON Schema (draft 2020-12) of ``cassette diff --format json``, made from the result
types: a two-run diff or many runs against the first. ``cassette diff --schema`` prints it."""

from __future__ import annotations

from pydantic import TypeAdapter

from ..types import Json
from .many import ManyDiff
from .types import RunDiff

__all__ = ["SCHEMA"]

SCHEMA: Json = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "cassette diff --format json",
    **TypeAdapter(RunDiff | ManyDiff).json_schema(mode="serialization"),
}
