"""Record and replay a policy: an OpenAI-style function, or an eval-protocol policy object.

``wrap_policy(fn, cas)`` returns a drop-in replacement for ``fn`` whose calls go through
``cas.call``/``cas.acall``: recording calls ``fn`` and stores its answer, replay serves the
answer and never calls ``fn``. Two conventions are understood:

* **openai**: ``fn(messages, tools=None, **kwargs)`` (sync or async) returns an OpenAI-style
  response: a dict, a pydantic model (``ChatCompletion``) or anything with ``model_dump``.
  The request is ``{"messages", "tools", **kwargs}``; the episode is ``cassette.episode``
  unless the call passes ``env_index=`` (consumed by the wrapper). Replay rebuilds the
  recorded type, named by the response's ``"$type"`` key (``"module:QualName"``).
* **eval_protocol**: ``await policy(tool_schemas, env_index, conversation_history)`` returns
  ``(tool_calls, usage, finish_reason)`` and appends the assistant message to the history
  in place. The wrapper is an object with the same ``__call__`` that delegates every other
  attribute (``add_tool_response``, ``model_id``, ...) to the policy. The request is
  ``{"tools": tool_schemas, "messages": history before the call}``; the response holds the
  tool calls, usage, finish reason and the messages the policy appended (one appended
  message is stored as ``"message"``, so the next request refers to it instead of copying
  it). Replay rebuilds the tool calls (``MCPToolCall``) and usage (``CompletionUsage``) as
  recorded and appends the same messages, so the rollout goes on identically. (Older
  eval-protocol policies return ``(tool_calls, usage)``; replay keeps that shape.)
  ``wrapper._make_llm_call(messages, tools)``, which some eval-protocol rollout processors
  call directly, is recorded too, as an openai-style call.

Types are rebuilt only if they are pydantic models or dataclasses; anything else (or a
type that cannot be imported) comes back as the recorded dict, with a ``CassetteWarning``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import warnings
from collections.abc import Callable
from typing import Any, Literal, cast

from pydantic import BaseModel

from ..cassette import Cassette
from ..codec import dumps, loads
from ..errors import CassetteError, CassetteWarning

__all__ = ["RecordedPolicy", "wrap_policy"]

Json = dict[str, Any]
Style = Literal["auto", "openai", "eval_protocol"]
TYPE_KEY = "$type"
_EP_PARAMS = frozenset({"tool_schemas", "conversation_history"})


# --- plain data and types ---------------------------------------------------------------


def plain(value: Any, what: str = "value") -> Any:
    """A JSON-able deep copy: pydantic models dumped, dataclasses and tuples converted."""
    try:
        return loads(dumps(value))
    except TypeError as exc:  # orjson.JSONEncodeError is a TypeError
        raise CassetteError(
            f"cannot store the policy's {what} in a cassette: {exc}; pass JSON-able data "
            "(dicts, lists, str, numbers, pydantic models, dataclasses)"
        ) from None


def type_path(obj: Any) -> str | None:
    """``"module:QualName"`` of ``obj``'s class, or None for plain data."""
    if obj is None or isinstance(obj, (dict, list, str, int, float, bool)):
        return None
    cls = type(obj)
    return f"{cls.__module__}:{cls.__qualname__}"


@functools.lru_cache(maxsize=256)
def _resolve(path: str) -> type[Any] | None:
    module, _, qualname = path.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError):
        return None
    if not isinstance(obj, type):
        return None
    if issubclass(obj, BaseModel) or dataclasses.is_dataclass(obj):
        return obj
    return None  # never call an arbitrary callable named by a file


def rebuild(path: str | None, data: Any) -> Any:
    """Rebuild ``data`` as the type recorded at ``path`` (pydantic model or dataclass)."""
    if path is None or not isinstance(data, dict):
        return data
    cls = _resolve(path)
    if cls is not None and issubclass(cls, BaseModel):
        try:
            return cls.model_validate(data)
        except (TypeError, ValueError):  # a loose model (ValidationError is a ValueError)
            return cls.model_construct(**data)
    if cls is not None:
        with contextlib.suppress(TypeError):
            return cls(**data)
    warnings.warn(
        f"cassette: cannot rebuild the recorded type {path!r} from {sorted(data)} (not "
        "importable here, not a pydantic model or dataclass, or its fields changed); "
        "returning the recorded dict. Install the package that defines it, or re-record",
        CassetteWarning,
        stacklevel=3,
    )
    return data


def _split(response: Json) -> tuple[str | None, Json]:
    body = dict(response)
    path = body.pop(TYPE_KEY, None)
    return (path if isinstance(path, str) else None), body


# --- the openai convention --------------------------------------------------------------


def _is_async(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    return not inspect.isfunction(fn) and inspect.iscoroutinefunction(type(fn).__call__)


def _openai_request(args: tuple[Any, ...], kwargs: Json) -> Json:
    rest = dict(kwargs)
    messages = args[0] if args else rest.pop("messages", None)
    tools = args[1] if len(args) > 1 else rest.pop("tools", None)
    request: Json = {"messages": messages, "tools": tools}
    if len(args) > 2:
        request["args"] = list(args[2:])
    request.update(rest)
    return cast(Json, plain(request, "request"))


def _openai_response(result: Any) -> Json:
    if isinstance(result, dict):
        return cast(Json, plain(result, "response"))
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        raise CassetteError(
            "the wrapped policy returned an awaitable but is not an async function; declare "
            "it `async def` (e.g. `async def fn(*a, **k): return await f(*a, **k)`) so that "
            "wrap_policy returns an async wrapper"
        )
    dump = getattr(result, "model_dump", None)
    if not callable(dump):
        raise CassetteError(
            f"the wrapped policy returned {type(result).__name__}; an OpenAI-style policy "
            "returns a dict or a model with model_dump() (such as ChatCompletion)"
        )
    body = cast(Json, plain(dump(mode="json", exclude_unset=True), "response"))
    body[TYPE_KEY] = type_path(result)
    return body


def _openai_result(response: Json) -> Any:
    path, body = _split(response)
    return rebuild(path, plain(body))  # a copy: the caller may change what it gets


def _wrap_openai(fn: Callable[..., Any], cas: Cassette, channel: str) -> Callable[..., Any]:
    if _is_async(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, env_index: int | str | None = None, **kwargs: Any) -> Any:
            request = _openai_request(args, kwargs)
            got: list[Any] = []

            async def live() -> Json:
                result = fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
                response = _openai_response(result)
                got.append(result)
                return response

            response = await cas.acall(request, live, env_index=env_index, channel=channel)
            return got[0] if got else _openai_result(response)

        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, env_index: int | str | None = None, **kwargs: Any) -> Any:
        request = _openai_request(args, kwargs)
        got: list[Any] = []

        def live() -> Json:
            result = fn(*args, **kwargs)
            response = _openai_response(result)
            got.append(result)
            return response

        response = cas.call(request, live, env_index=env_index, channel=channel)
        return got[0] if got else _openai_result(response)

    return wrapper


# --- the eval-protocol convention -------------------------------------------------------


def _tool_call_dict(call: Any, common: str | None) -> Json:
    data = plain(call, "tool call")
    if not isinstance(data, dict):
        raise CassetteError(f"a tool call must be an object, not {type(call).__name__}")
    path = type_path(call)
    if path != common:
        data[TYPE_KEY] = path
    return cast(Json, data)


def _ep_response(result: Any, appended: list[Any]) -> Json:
    # (tool_calls, usage, finish_reason); older eval-protocol returned no finish_reason
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):
        raise CassetteError(
            "an eval-protocol policy returns (tool_calls, usage, finish_reason), not "
            f"{type(result).__name__}; wrap it with style='openai' if it is a chat function"
        )
    calls, usage = result[0], result[1]
    common = type_path(calls[0]) if calls else None
    response: Json = {
        "tool_calls": [_tool_call_dict(c, common) for c in calls],
        "usage": plain(usage, "usage"),
        "$types": {"tool_call": common, "usage": type_path(usage)},
    }
    if len(result) == 3:
        response["finish_reason"] = plain(result[2], "finish_reason")
    messages = plain(appended, "appended messages")
    if len(messages) == 1 and isinstance(messages[0], dict):
        response["message"] = messages[0]  # the next request refers to it ($ref)
    else:
        response["appended"] = messages
    return response


def _ep_result(response: Json) -> tuple[tuple[Any, ...], list[Any]]:
    types = response.get("$types") or {}
    common = types.get("tool_call")
    calls = []
    for data in response.get("tool_calls") or []:
        path, body = _split(data)
        calls.append(rebuild(path or common, plain(body)))
    usage = rebuild(types.get("usage"), plain(response.get("usage")))
    result: tuple[Any, ...] = (calls, usage)
    if "finish_reason" in response:
        result = (calls, usage, response["finish_reason"])
    appended = [response["message"]] if "message" in response else response.get("appended", [])
    return result, cast(list[Any], plain(appended))


class RecordedPolicy:
    """An eval-protocol policy whose ``__call__`` goes through a cassette.

    Every other attribute is the wrapped policy's (read and written through), and
    ``isinstance(wrapper, type(policy))`` holds, so rollout code takes it as the policy.
    """

    __slots__ = ("_cas", "_channel", "_policy", "_raw_llm")

    def __init__(self, policy: Any, cas: Cassette, channel: str = "llm") -> None:
        object.__setattr__(self, "_policy", policy)
        object.__setattr__(self, "_cas", cas)
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_raw_llm", None)

    @property
    def __wrapped__(self) -> Any:
        return self._policy

    @property  # type: ignore[misc]
    def __class__(self) -> type[Any]:  # isinstance() checks see the wrapped policy's class
        return type(self._policy)

    async def __call__(
        self, tool_schemas: Any, env_index: int | str, conversation_history: list[Any]
    ) -> tuple[Any, ...]:
        request: Json = {
            "tools": plain(tool_schemas, "tool schemas"),
            "messages": plain(conversation_history, "conversation history"),
        }
        got: list[tuple[Any, ...]] = []

        async def live() -> Json:
            start = len(conversation_history)
            result = self._policy(tool_schemas, env_index, conversation_history)
            if inspect.isawaitable(result):
                result = await result
            response = _ep_response(result, conversation_history[start:])
            got.append(result)
            return response

        response = await self._cas.acall(request, live, env_index=env_index, channel=self._channel)
        if got:
            return got[0]
        result, appended = _ep_result(response)
        conversation_history.extend(appended)
        return result

    def __getattr__(self, name: str) -> Any:
        policy = object.__getattribute__(self, "_policy")
        value = getattr(policy, name)
        if name == "_make_llm_call" and callable(value):  # the chat call some rollouts make
            wrapped = object.__getattribute__(self, "_raw_llm")
            if wrapped is None or wrapped.__wrapped__ != value:
                wrapped = _wrap_openai(value, self._cas, self._channel)
                object.__setattr__(self, "_raw_llm", wrapped)
            return wrapped
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._policy, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._policy, name)

    def __repr__(self) -> str:
        return f"<RecordedPolicy {self._policy!r} on {self._cas!r}>"


# --- entry point ------------------------------------------------------------------------


def _detect(fn: Any) -> Style:
    if hasattr(fn, "add_tool_response") or any(
        c.__name__ == "PlaybackPolicyBase" for c in type(fn).__mro__
    ):
        return "eval_protocol"
    try:
        params = set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return "openai"
    return "eval_protocol" if params & _EP_PARAMS else "openai"


def wrap_policy(fn: Any, cas: Cassette, *, style: Style = "auto", channel: str = "llm") -> Any:
    """Return ``fn`` wrapped so that its calls are recorded to / replayed from ``cas``.

    ``style="auto"`` takes an object with ``add_tool_response`` (or a callable with a
    ``conversation_history``/``tool_schemas`` parameter) as an eval-protocol policy and
    anything else as an OpenAI-style chat function.
    """
    if not callable(fn):
        raise TypeError(f"wrap_policy needs a callable, not {type(fn).__name__}")
    if style == "auto":
        style = _detect(fn)
    if style == "eval_protocol":
        return RecordedPolicy(fn, cas, channel)
    if style == "openai":
        return _wrap_openai(fn, cas, channel)
    raise ValueError(f"unknown style {style!r}; use 'auto', 'openai' or 'eval_protocol'")
