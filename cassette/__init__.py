"""rollout-cassette: record the LLM calls of agent runs, replay them offline, diff two runs.

import cassette

with cassette.open("runs/a.jsonl", mode="auto") as cas:
    with cassette.episode(0):
        resp = cas.call(request, live=lambda: client_call(request))
"""

from __future__ import annotations

from typing import Any as _Any

from ._version import __version__
from .errors import (
    CassetteError,
    CassetteFormatError,
    CassetteMismatch,
    CassetteMiss,
    CassetteModeError,
    CassettePathError,
    CassetteStorageError,
    CassetteWarning,
    RecordedError,
)
from .redact import Redactor
from .replay.cassette import Cassette, ErrorCodec, Mode, fork, open
from .replay.context import ContextExecutor, bind, current_episode, episode
from .replay.matching import DEFAULT_IGNORE, Matcher


def json_schema() -> dict[str, _Any]:
    """The JSON Schema of one line of a cassette file (:func:`.format.models.json_schema`)."""
    from .format.models import json_schema as schema  # pydantic models load on first use

    return schema()


__all__ = [
    "DEFAULT_IGNORE",
    "Cassette",
    "CassetteError",
    "CassetteFormatError",
    "CassetteMismatch",
    "CassetteMiss",
    "CassetteModeError",
    "CassettePathError",
    "CassetteStorageError",
    "CassetteWarning",
    "ContextExecutor",
    "ErrorCodec",
    "Matcher",
    "Mode",
    "RecordedError",
    "Redactor",
    "__version__",
    "bind",
    "current_episode",
    "episode",
    "fork",
    "json_schema",
    "open",
]
