"""Pydantic models of the cassette file format, version 1 (one JSON object a line)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from ..types import EnvIndex
from .version import FORMAT, VERSION

__all__ = [
    "FORMAT",
    "VERSION",
    "Delta",
    "ErrorInfo",
    "Header",
    "Interaction",
    "Line",
    "Outcome",
    "json_schema",
]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Header(_Model):
    """First line of every cassette file."""

    type: Literal["header"] = "header"
    format: Literal["rollout-cassette"] = "rollout-cassette"
    version: Literal[1] = 1
    created_at: str = Field(description="ISO-8601 time the file was started.")
    producer: str = Field(description='"rollout-cassette/X.Y.Z"')
    meta: dict[str, Any] = Field(default_factory=dict)


class Delta(_Model):
    """How a request's message list is rebuilt from the previous request of its key.

    The full list is the first ``keep`` messages of the request recorded at step ``base``
    of the same (env_index, channel) (always the previous interaction line of that
    (env_index, channel) in the same file), followed by the messages stored in this
    line's ``request.messages`` (or ``request.input``). A stored message of the form
    ``{"$ref": [path...], "omit": [keys...]}`` stands for the object at ``path`` inside the
    *response* of that base interaction (e.g. ``["choices", 0, "message"]``), minus the keys
    listed in ``omit``: so the assistant message that the model answered is on disk once.
    Top-level request keys named in ``same`` (e.g. ``tools``) are not stored: their values
    are those of the base request. ``same: "*"`` names every top-level key of the base
    request that this line's ``request`` does not hold (the usual case: only what changed
    is written).

    Where a key was recorded twice (two writers appended the same episode), the base is
    the latest earlier line of step ``base`` of that (env_index, channel) in the same file.
    A line whose base is not there (lines lost, moved or mixed up), or cannot be rebuilt,
    is unusable: replay raises a CassetteFormatError naming it when it is asked for, as
    for every later line built on it; other lines and episodes replay.
    """

    base: int = Field(ge=0, description="step of the base interaction")
    keep: int = Field(ge=0, description="messages taken from the base request")
    field: Literal["messages", "input"] = "messages"
    same: list[str] | Literal["*"] = Field(
        default_factory=list,
        description='top-level request keys copied from the base request; "*": all it '
        "holds that this line does not",
    )


class ErrorInfo(_Model):
    """A recorded exception of the live call."""

    type: str = Field(description="qualified class name, e.g. openai.RateLimitError")
    message: str
    data: dict[str, Any] = Field(default_factory=dict, description="adapter-specific details")


class Interaction(_Model):
    """One call on one channel of one episode.

    A key (env_index, channel, step) recorded twice is served from its first line, with
    a CassetteWarning naming both; ``cassette merge OUT IN --on-conflict first`` writes a
    copy without the repeats. ``meta.checksum`` (8 hex digits) is the CRC-32 of the
    compact JSON ``[response, error]`` as the line holds them (``error`` null when
    absent): replay refuses a line whose response or error no longer matches it, naming
    the line; ``cassette validate`` reports it. Lines without it are served unchecked.
    """

    type: Literal["interaction"] = "interaction"
    env_index: EnvIndex
    channel: str = "llm"
    step: int = Field(ge=0)
    delta: Delta | None = None
    request: dict[str, Any] = Field(description="the request (delta-encoded when delta is set)")
    request_sha256: str = Field(pattern="^[0-9a-f]{64}$")
    response: dict[str, Any] | None = None
    error: ErrorInfo | None = None
    meta: dict[str, Any] = Field(
        default_factory=dict,
        description="latency_ms, recorded_at; model where the model that answered differs; "
        "usage of a stream; redacted (count of secrets replaced); checksum: the CRC-32 (8 hex "
        "digits) of the compact JSON [response, error], checked on replay",
    )


class Outcome(_Model):
    """The result of one episode; the last outcome line of an env_index wins."""

    type: Literal["outcome"] = "outcome"
    env_index: EnvIndex
    reward: float | None = None
    terminated: bool | None = None
    info: dict[str, Any] = Field(default_factory=dict)


Line = Annotated[Header | Interaction | Outcome, Field(discriminator="type")]
LINE_ADAPTER: TypeAdapter[Header | Interaction | Outcome] = TypeAdapter(Line)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of a cassette file."""
    schema = LINE_ADAPTER.json_schema()
    schema["title"] = "rollout-cassette line (format version 1)"
    schema["description"] = (
        "One JSON object a line, UTF-8. Values are JSON only: a request holding NaN or an "
        "infinity, bytes that are not UTF-8, a set, an int beyond 64 bits, a dict key that "
        "is not a string, or containers nested deeper than 254 levels is refused before the "
        "live call (CassetteError), never written as something else. Readers skip blank "
        "lines, skip a cut-short last line with a warning, serve the first line of a key "
        "recorded twice (with a warning), and refuse only the lines of a broken delta chain "
        "and lines whose meta.checksum does not match, when they are asked for."
    )
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
