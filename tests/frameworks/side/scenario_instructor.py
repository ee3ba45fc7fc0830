"""instructor over wrapped clients: TOOLS and JSON modes (sync and async), partial and
iterable streams, and the Responses API's tools mode."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import instructor
import pytest
from pydantic import BaseModel, Field

from ._harness import Clients, concurrent_episodes, record_and_replay

PROMPT = "Extract the trip: from Lisbon to Porto and Braga, 4 nights."
MODES = (instructor.Mode.TOOLS, instructor.Mode.JSON)


class City(BaseModel):
    name: str
    population: int = Field(ge=1)


class Trip(BaseModel):
    origin: City
    stops: list[City]
    nights: int


def messages(prompt: str) -> list[Any]:
    return [{"role": "user", "content": prompt}]


def extract(mode: instructor.Mode) -> Any:
    def scenario(clients: Clients, prompt: str) -> Any:
        client = instructor.from_openai(clients.sync, mode=mode)
        trip, completion = client.chat.completions.create_with_completion(
            model="gpt-4o-mini", response_model=Trip, messages=messages(prompt), max_retries=0
        )
        return {"trip": trip.model_dump(), "completion": completion.model_dump()}

    return scenario


def aextract(mode: instructor.Mode) -> Any:
    async def scenario(clients: Clients, prompt: str) -> Any:
        client = instructor.from_openai(clients.aio, mode=mode)
        trip = await client.chat.completions.create(
            model="gpt-4o-mini", response_model=Trip, messages=messages(prompt), max_retries=0
        )
        return trip.model_dump()

    return scenario


def partial(clients: Clients, prompt: str) -> Any:
    client = instructor.from_openai(clients.sync, mode=instructor.Mode.TOOLS)
    stream = client.chat.completions.create_partial(
        model="gpt-4o-mini", response_model=Trip, messages=messages(prompt), max_retries=0
    )
    return [part.model_dump() for part in stream]


def iterable(clients: Clients, prompt: str) -> Any:
    client = instructor.from_openai(clients.sync, mode=instructor.Mode.TOOLS)
    cities = client.chat.completions.create_iterable(
        model="gpt-4o-mini", response_model=City, messages=messages(prompt), max_retries=0
    )
    return [city.model_dump() for city in cities]


def responses_tools(clients: Clients, prompt: str) -> Any:
    client = instructor.from_openai(clients.sync, mode=instructor.Mode.RESPONSES_TOOLS)
    trip = client.responses.create(
        model="gpt-4o-mini", response_model=Trip, input=prompt, max_retries=0
    )
    return trip.model_dump()


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_extract(tmp_path: Path, mode: instructor.Mode) -> None:
    out = record_and_replay(tmp_path, extract(mode), PROMPT)
    assert Trip.model_validate(out["trip"]) and out["completion"]["usage"]["total_tokens"] > 0


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_extract_async(tmp_path: Path, mode: instructor.Mode) -> None:
    assert Trip.model_validate(record_and_replay(tmp_path, aextract(mode), PROMPT))


def test_partial_stream(tmp_path: Path) -> None:
    parts = record_and_replay(tmp_path, partial, PROMPT)
    assert len(parts) > 1 and Trip.model_validate(parts[-1])


def test_iterable(tmp_path: Path) -> None:
    cities = record_and_replay(tmp_path, iterable, PROMPT)
    assert cities and all(City.model_validate(c) for c in cities)


def test_responses_tools(tmp_path: Path) -> None:
    assert Trip.model_validate(record_and_replay(tmp_path, responses_tools, PROMPT))


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_eight_concurrent_episodes(tmp_path: Path, mode: instructor.Mode) -> None:
    for trip in concurrent_episodes(tmp_path, aextract(mode), PROMPT):
        Trip.model_validate(trip)
