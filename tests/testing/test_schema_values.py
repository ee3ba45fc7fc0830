"""schema_value: the values the scripted server answers with validate against the schemas
that pydantic models produce (nested models, optionals, enums, tuples, formats, bounds)."""

from __future__ import annotations

import datetime as dt
import enum
import json
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from cassette.testing.schema_values import (
    find_schema,
    json_answer,
    requested_json,
    schema_value,
    tool_arguments,
)


class Color(str, enum.Enum):
    red = "red"
    blue = "blue"


class Address(BaseModel):
    model_config = ConfigDict(extra="forbid")
    street: str
    zip_code: Annotated[str, Field(min_length=5, max_length=5)]


class Person(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    age: Annotated[int, Field(ge=18, le=99)]
    score: Annotated[float, Field(gt=0, lt=1)]
    home: Address
    previous: list[Address] = Field(min_length=2)
    nickname: str | None = None
    favourite: Color
    kind: Literal["person"]
    born: dt.date
    seen: dt.datetime
    pair: tuple[int, str]
    tags: dict[str, int]
    boss: Person | None


@pytest.mark.parametrize("rnd", [False, True])
def test_values_validate_against_a_pydantic_schema(rnd: bool) -> None:
    schema = Person.model_json_schema()
    assert "$defs" in schema  # the nested models are references
    value = schema_value(schema, "Ada", rnd)
    person = Person.model_validate(value)
    assert person.name.startswith("Ada")
    assert len(person.previous) == 2
    assert person.boss is None or isinstance(person.boss, Person)
    again = schema_value(schema, "Ada", rnd)
    assert (again == value) is (not rnd)  # random mode answers differently each time


def test_recursive_and_combined_schemas_terminate() -> None:
    class Node(BaseModel):
        name: str
        children: list[Node]

    schema = Node.model_json_schema()
    Node.model_validate(schema_value(schema, "n"))
    both = {"allOf": [{"$ref": "#/$defs/A"}, {"properties": {"b": {"type": "integer"}},
            "required": ["b"]}], "$defs": {"A": {"properties": {"a": {"type": "string"}},
            "required": ["a"]}}}  # fmt: skip
    assert schema_value(both, "t") == {"a": "t", "b": 2}
    assert schema_value({"type": ["null", "boolean"]}, "t") is True
    assert schema_value({"anyOf": [{"type": "null"}]}, "t") is None
    assert schema_value({"type": "array", "items": {"type": "integer"}, "maxItems": 0}, "t") == []


def test_tool_arguments_fit_a_referenced_model() -> None:
    schema = TypeAdapter(Address).json_schema()
    assert Address.model_validate(tool_arguments(schema, "Main St", rnd=True))
    ref_only = {"$ref": "#/$defs/Address", "$defs": {"Address": schema}}
    assert Address.model_validate(tool_arguments(ref_only, "Main St"))


def test_requested_json_reads_chat_and_responses_formats() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    chat = {"response_format": {"type": "json_schema", "json_schema": {"name": "n",
            "schema": schema}}}  # fmt: skip
    assert requested_json(chat) == (True, schema)
    resp = {"text": {"format": {"type": "json_schema", "name": "n", "schema": schema}}}
    assert requested_json(resp) == (True, schema)
    assert requested_json({"response_format": {"type": "json_object"}}) == (True, None)
    assert requested_json({"text": {"format": {"type": "text"}}}) == (False, None)
    assert requested_json({"messages": []}) == (False, None)


def test_json_object_uses_a_schema_written_in_the_messages() -> None:
    schema = Address.model_json_schema()
    system = f"Answer in {{json}} that matches:\n\n{json.dumps(schema, indent=2)}\n\nThanks."
    assert find_schema(["no schema {here}", system]) == schema
    Address.model_validate_json(json_answer(None, [system], "Main St"))
    answer: Any = json.loads(json_answer(None, ["plain"], "hi"))
    assert answer == {"answer": "hi"}
