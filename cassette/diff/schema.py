"""The JSON Schema of ``cassette diff --format json`` (``cassette diff --schema``)."""

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
