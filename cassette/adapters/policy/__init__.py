"""Record and replay a policy: ``wrap_policy(fn, cas)`` (docs/adapters/policy.md), an
OpenAI-style ``fn(messages, tools=None, **kwargs)`` or an eval-protocol policy, whose
appends to the conversation history replay appends again (:class:`RecordedPolicy`)."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Literal, cast

from ...errors import CassetteError
from ...replay.cassette import Cassette
from ...replay.modes import Mode
from ...types import Json
from .._common.objects import TYPE_KEY, Tee, dump_object, plain, rebuild, type_path
from ._stream import PolicyStream, replayed_stream, stream_of, teed

__all__ = ["PolicyStream", "RecordedPolicy", "wrap_policy"]

Style = Literal["auto", "openai", "eval_protocol"]
_EP_PARAMS = frozenset({"tool_schemas", "conversation_history"})
_LIVE_FIRST = (Mode.RECORD, Mode.PASSTHROUGH)  # modes that never serve a recording


def _split(response: Json) -> tuple[str | None, Json]:
    body = dict(response)
    path = body.pop(TYPE_KEY, None)
    return (path if isinstance(path, str) else None), body


def _is_async(fn: Any) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or (
        not inspect.isfunction(fn) and inspect.iscoroutinefunction(type(fn).__call__)
    )


def _openai_request(args: tuple[Any, ...], kwargs: Json) -> Json:
    rest = dict(kwargs)
    messages = args[0] if args else rest.pop("messages", None)
    tools = args[1] if len(args) > 1 else rest.pop("tools", None)
    request: Json = {"messages": messages, "tools": tools}
    if len(args) > 2:
        request["args"] = list(args[2:])
    return cast(Json, plain(request | rest, "request"))


def _not_async(what: str) -> CassetteError:
    return CassetteError(
        f"the wrapped policy returned {what} but is not an async function; declare it "
        "`async def` (e.g. `async def fn(*a, **k): return await f(*a, **k)`) so that "
        "wrap_policy returns an async wrapper"
    )


def _openai_response(result: Any) -> Json:
    if isinstance(result, dict):
        return cast(Json, plain(result, "response"))
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
        raise _not_async("an awaitable")
    if not callable(getattr(result, "model_dump", None)):
        raise CassetteError(
            f"the wrapped policy returned {type(result).__name__}; an OpenAI-style policy "
            "returns a dict, a model with model_dump() (such as ChatCompletion) or an "
            "iterator of chunks"
        )
    return dump_object(result)


class _Call:
    def __init__(
        self, cas: Cassette, channel: str, env_index: int | str | None, args: Any, kwargs: Json
    ) -> None:
        self.cas = cas
        self.keys: Json = {"env_index": env_index, "channel": channel}
        self.request = _openai_request(args, kwargs)
        self.got: list[Any] = []

    @contextlib.contextmanager
    def failing(self) -> Iterator[None]:
        """Around a policy called first (record/passthrough): records its error."""
        try:
            yield
        except Exception as exc:
            self.cas.call(self.request, functools.partial(_raise, exc), **self.keys)
            raise  # (the call above raises it already)

    def answer(self, result: Any, aio: bool) -> Any:
        """Record what the policy, called first, returned: an answer, or a stream as it comes."""
        stream = teed(result)
        if stream is None:
            response = _openai_response(result)
            self.cas.call(self.request, lambda: response, **self.keys)
            return result
        tee, info = stream
        source: Iterator[Json] | AsyncIterator[Json]
        if info["async"] if aio else not info["sync"]:
            source = self.cas.astream(self.request, lambda: tee.alive(result), **self.keys)
        else:
            source = self.cas.stream(self.request, lambda: tee.live(result), **self.keys)
        return stream_of(source, tee, info, live=result)

    def live(self, result: Any) -> Json:
        """The response dict of what the policy returned (a stream read whole)."""
        stream = teed(result)
        if stream is None:
            self.got.append(result)
            return _openai_response(result)
        if not stream[1]["sync"]:
            raise _not_async("an async iterator")
        return self._drained(result, *stream, list(stream[0].live(result)))

    async def alive(self, result: Any) -> Json:
        stream = teed(result)
        if stream is None or not stream[1]["async"]:
            return self.live(result)
        return self._drained(result, *stream, [c async for c in stream[0].alive(result)])

    def _drained(self, result: Any, tee: Tee, info: Json, chunks: list[Json]) -> Json:
        self.got.append(stream_of(iter(chunks), tee, info, live=result))
        return {"chunks": chunks}

    def result(self, response: Json) -> Any:
        """What the caller gets: the live result, else the recorded one rebuilt."""
        if self.got:
            return self.got[0]
        if isinstance(response.get("chunks"), list) and TYPE_KEY not in response:
            return replayed_stream(response)
        path, body = _split(response)
        return rebuild(path, plain(body))  # a copy: the caller may change what it gets


def _raise(exc: BaseException) -> Json:
    raise exc


def _wrap_openai(fn: Callable[..., Any], cas: Cassette, channel: str) -> Callable[..., Any]:
    if _is_async(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, env_index: int | str | None = None, **kwargs: Any) -> Any:
            call = _Call(cas, channel, env_index, args, kwargs)

            async def run() -> Any:
                result = fn(*args, **kwargs)
                return (await result) if inspect.isawaitable(result) else result

            if cas.mode in _LIVE_FIRST:
                with call.failing():
                    result = await run()
                return call.answer(result, aio=True)

            async def live() -> Json:
                return await call.alive(await run())

            return call.result(await cas.acall(call.request, live, **call.keys))

        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, env_index: int | str | None = None, **kwargs: Any) -> Any:
        call = _Call(cas, channel, env_index, args, kwargs)
        if cas.mode in _LIVE_FIRST:
            with call.failing():
                result = fn(*args, **kwargs)
                if inspect.isawaitable(result):
                    _openai_response(result)  # refused: the wrapper must be async
            return call.answer(result, aio=False)
        live = lambda: call.live(fn(*args, **kwargs))  # noqa: E731
        return call.result(cas.call(call.request, live, **call.keys))

    return wrapper


def _tool_call_dict(call: Any, common: str | None) -> Json:
    data = plain(call, "tool call")
    if not isinstance(data, dict):
        raise CassetteError(f"a tool call must be an object, not {type(call).__name__}")
    path = type_path(call)
    if path != common:
        data[TYPE_KEY] = path
    return cast(Json, data)


def _ep_response(result: Any, appended: list[Any]) -> Json:
    if not isinstance(result, (tuple, list)) or len(result) not in (2, 3):  # 2: older ones
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
    calls = [
        rebuild(p or common, plain(b)) for p, b in map(_split, response.get("tool_calls") or [])
    ]
    usage = rebuild(types.get("usage"), plain(response.get("usage")))
    result = (calls, usage) + ((response["finish_reason"],) if "finish_reason" in response else ())
    appended = [response["message"]] if "message" in response else response.get("appended", [])
    return result, cast(list[Any], plain(appended))


class RecordedPolicy:
    """An eval-protocol policy whose ``__call__`` goes through a cassette; every other
    attribute is the policy's, and ``isinstance(wrapper, type(policy))`` holds."""

    __slots__ = ("_cas", "_channel", "_policy")

    def __init__(self, policy: Any, cas: Cassette, channel: str = "llm") -> None:
        object.__setattr__(self, "_policy", policy)
        object.__setattr__(self, "_cas", cas)
        object.__setattr__(self, "_channel", channel)

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
        value = getattr(object.__getattribute__(self, "_policy"), name)
        if name == "_make_llm_call" and callable(value):  # the chat call some rollouts make
            return _wrap_openai(value, self._cas, self._channel)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._policy, name, value)

    def __delattr__(self, name: str) -> None:
        delattr(self._policy, name)

    def __repr__(self) -> str:
        return f"<RecordedPolicy {self._policy!r} on {self._cas!r}>"


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
    """``fn`` wrapped so that its calls are recorded to / replayed from ``cas``;
    ``style="auto"`` tells an eval-protocol policy (``add_tool_response``, or a
    ``conversation_history`` parameter) from an OpenAI-style chat function."""
    if not callable(fn):
        raise TypeError(f"wrap_policy needs a callable, not {type(fn).__name__}")
    if style == "auto":
        style = _detect(fn)
    if style == "eval_protocol":
        return RecordedPolicy(fn, cas, channel)
    if style == "openai":
        return _wrap_openai(fn, cas, channel)
    raise ValueError(f"unknown style {style!r}; use 'auto', 'openai' or 'eval_protocol'")
