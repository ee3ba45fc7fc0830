"""No entry point of the openai SDK bypasses the cassette: every public method of every
resource of the client (walked recursively, so a method a future SDK adds is walked too)
is called on a wrapped client against the scripted server, then again in replay against
a dead port with a socket guard. Each must either be served by the cassette (the same
outcome, no connection attempted) or be refused with a CassetteError naming it."""

from __future__ import annotations

import functools
import inspect
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openai import OpenAI
from openai._resource import SyncAPIResource

import cassette
from cassette import CassetteError
from cassette.adapters.openai import wrap_openai
from cassette.storage.index import load_index
from tests.helpers.chat import MakeServer
from tests.helpers.offline import KEY, NOWHERE, offline

WRAPPERS = ("with_raw_response", "with_streaming_response")


def resources(obj: Any, where: str) -> Iterator[tuple[str, Any]]:
    """(dotted path, resource) of every resource reachable from ``obj``."""
    for name in sorted(dir(type(obj))):
        if name.startswith("_") or name in WRAPPERS:
            continue
        static = inspect.getattr_static(type(obj), name)
        if not isinstance(static, (functools.cached_property, property)):
            continue
        value = getattr(obj, name)
        if isinstance(value, SyncAPIResource):
            path = f"{where}.{name}"
            yield path, value
            yield from resources(value, path)


def methods(resource: Any) -> list[str]:
    return [
        name
        for name, fn in inspect.getmembers(type(resource), inspect.isfunction)
        if not name.startswith("_") and name not in WRAPPERS
    ]


def dummy(name: str, annotation: str) -> Any:
    """An argument of the right shape, enough for the SDK to send the request."""
    if name == "files":
        return [("a.png", b"\x89PNG")]
    if "FileTypes" in annotation or name in ("file", "image", "mask"):
        return ("a.png", b"\x89PNG")
    if name == "messages":
        return [{"role": "user", "content": "hi"}]
    if "bool" in annotation:
        return False
    if "int" in annotation or "float" in annotation:
        return 1
    if "Iterable" in annotation or "List" in annotation or "Sequence" in annotation:
        return []
    if "Dict" in annotation or "Mapping" in annotation:
        return {}
    return "x"


def arguments(fn: Any) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for name, p in list(inspect.signature(fn).parameters.items())[1:]:
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        value = dummy(name, str(p.annotation))
        if p.kind is p.KEYWORD_ONLY:
            kwargs[name] = value
        else:
            args.append(value)
    return args, kwargs


def outcome(call: Any) -> tuple[str, ...]:
    """What a call gave: its result's type (context managers entered, streams and pages
    read), or the exception's type and message."""
    try:
        with warnings.catch_warnings():  # the Assistants API is deprecated, not gone
            warnings.simplefilter("ignore", DeprecationWarning)
            result = call()
        if hasattr(result, "__enter__") and hasattr(result, "__exit__"):
            with result as inner:
                result = inner
                if hasattr(inner, "__iter__") and not isinstance(inner, (str, bytes, dict)):
                    result = [type(item).__name__ for item in inner]
        elif hasattr(result, "__iter__") and not isinstance(result, (str, bytes, dict, list)):
            result = [type(item).__name__ for item in result]
        return ("ok", type(result).__name__, repr(result)[:60] if isinstance(result, list) else "")
    except Exception as exc:  # noqa: BLE001 - what is raised is the outcome
        return ("raised", type(exc).__name__, str(exc).split("\n")[0][:200])


def client_of(base_url: str) -> OpenAI:
    """A client that may call every endpoint (admin ones too, where the SDK has them)."""
    options: dict[str, Any] = {"base_url": base_url, "api_key": KEY, "max_retries": 0}
    if "admin_api_key" in inspect.signature(OpenAI).parameters:
        options["admin_api_key"] = "sk-admin-0123456789abcdef"
    return OpenAI(**options)


def test_every_sdk_method_is_recorded_or_refused(
    make_server: MakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_WEBHOOK_SECRET", "whsec_dGVzdA==")
    server = make_server("script")
    path = tmp_path / "walk.jsonl"
    with client_of(server.base_url) as plain:
        calls = [
            (f"{where}.{name}", where, name)
            for where, resource in resources(plain, "client")
            for name in methods(resource)
        ]

    def run(base_url: str, mode: str) -> dict[str, tuple[str, ...]]:
        seen: dict[str, tuple[str, ...]] = {}
        with (
            cassette.open(path, mode=mode) as cas,
            client_of(base_url) as client,
        ):
            wrapped = wrap_openai(client, cas)
            for label, where, name in calls:
                target: Any = wrapped
                for part in where.split(".")[1:]:
                    target = getattr(target, part)
                fn = getattr(target, name)
                args, kwargs = arguments(getattr(type(target), name))
                with cassette.episode(label):
                    seen[label] = outcome(lambda: fn(*args, **kwargs))  # noqa: B023
        return seen

    recorded = run(server.base_url, "record")
    with offline():
        replayed = run(NOWHERE, "replay")
    assert len(calls) > 100, f"the walk found only {len(calls)} methods"
    sent = {key[0] for key in load_index([path]).entries}
    differ = {k: (recorded[k], replayed[k]) for k in recorded if recorded[k] != replayed[k]}
    assert not differ, f"replayed differently from the recording: {differ}"
    refused = {k: v for k, v in recorded.items() if v[1] == CassetteError.__name__}
    for label, found in refused.items():
        # names the SDK method that sends it (helpers that upload in a thread pool, such as
        # upload_and_poll, name the files.create they call)
        http = re.match(r"[A-Z]\w*\.[a-z_]+ \((POST|GET) /\S+\) sends a multipart", found[2])
        websocket = re.match(r"[A-Z]\w*Manager of connect\(\) opens a websocket", found[2])
        assert http or (websocket and label.endswith(".connect")), (label, found)
    local = {
        k: v for k, v in recorded.items() if k not in sent and k not in refused and v[0] != "ok"
    }
    # methods that raised before sending anything: argument checks of the SDK itself, the
    # webhook helpers, websockets without the websockets package
    assert len(sent) > 0.85 * len(calls), (len(sent), len(calls), local)
    assert len(refused) >= 5, refused
