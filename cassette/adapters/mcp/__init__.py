"""Record and replay an agent's MCP traffic: ``mcp_session(cas, server)``.

.. code-block:: python

    import cassette
    from cassette.adapters.mcp import mcp_session
    from mcp import StdioServerParameters

    server = StdioServerParameters(command="python", args=["my_server.py"])
    with cassette.open("runs/a.jsonl", mode="auto") as cas:
        async with mcp_session(cas, server) as session:  # a ClientSession, initialized
            with cassette.episode(0):
                tools = await session.list_tools()
                result = await session.call_tool("add", {"a": 1, "b": 2})

Recording (and ``append``/``passthrough``) connects to ``server``; replay connects to
nothing at all: the session runs over an idle in-memory stream pair, so it is still a
``ClientSession`` and the agent's code is the same in both.

Every request a session sends goes through :meth:`RecordingClientSession.send_request`
(list_tools, call_tool, read_resource, get_prompt, and also the ``tools/list`` that
call_tool sends by itself to validate structured output, pings, completions, ...) and
becomes one interaction on channel ``"mcp"`` of the current :func:`cassette.episode`, with
its own step counter. The request dict is the wire form ``{"method", "params"}`` without
``params._meta`` (request ids, progress tokens and trace context change every run); the
handshake (``initialize``, 2.x ``server/discover``) is keyed by its method alone, since its
params carry SDK versions. The response is ``{"result": <wire form>, "progress": [...]}``;
progress notifications are fired again, in order, to the caller's ``progress_callback`` on
replay. JSON-RPC errors replay as the SDK's own ``McpError``/``MCPError`` with the recorded
code, message and data; ``isError`` tool results are ordinary results. The recorded form is
the same under mcp 1.x and 2.x, so a cassette recorded under one replays under the other.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, ClassVar

import anyio.lowlevel
from mcp import ClientSession
from pydantic import BaseModel

from ...errors import CassetteError, RecordedError
from ...replay.cassette import Cassette, Mode
from ...types import Json
from ._compat import (
    ERROR_TYPE,
    MAJOR,
    dump_model,
    error_class,
    error_fields,
    handshake_versions,
    idle_transport,
    is_error_name,
    make_error,
    normalise_uri,
    single_errors,
    transport,
    validate_result,
)

__all__ = [
    "CHANNEL",
    "MAJOR",
    "MCPError",
    "MCPErrors",
    "RecordingClientSession",
    "idle_transport",
    "mcp_session",
    "recording_client",
    "request_dict",
]

ProgressFn = Callable[[float, "float | None", "str | None"], Awaitable[None]]
CHANNEL = "mcp"
HANDSHAKE = frozenset({"initialize", "server/discover"})
MCPError: type[Exception] = error_class  # the SDK's JSON-RPC error: McpError in 1.x
_PROGRESS = "_cassette_progress"  # recorded progress of a failed request, on its exception
logger = logging.getLogger(__name__)


def request_dict(request: Any) -> Json:
    """The request dict of an MCP request: ``{"method", "params"}`` in wire form, without
    ``params._meta``; the handshake methods are keyed by ``{"method"}`` alone."""
    data: Json = (
        request.model_dump(by_alias=True, mode="json", exclude_none=True)
        if isinstance(request, BaseModel)
        else dict(request)
    )
    method = str(data.get("method"))
    key: Json = {"method": method}
    if method in HANDSHAKE:
        return key
    params = dict(data.get("params") or {})
    params.pop("_meta", None)
    if "uri" in params and method.startswith("resources/"):
        params["uri"] = normalise_uri(params["uri"])
    if params:
        key["params"] = params
    return key


class MCPErrors:
    """The ErrorCodec of MCP requests: JSON-RPC errors (``McpError`` in 1.x, ``MCPError``
    in 2.x) are stored as ``{"code", "message", "data"}`` and replayed as this SDK's class,
    with the progress the request reported before it failed."""

    def __init__(self) -> None:
        self.progress: list[Json] = []

    def dump(self, exc: BaseException) -> Json | None:
        fields = error_fields(exc)
        if fields is None:
            return None
        data = dict(fields)
        if self.progress:
            data["progress"] = list(self.progress)
        return {"type": ERROR_TYPE, "message": str(exc), "data": data}

    def load(self, info: Json) -> BaseException | None:
        if not is_error_name(info.get("type")):
            return None
        data = info.get("data") or {}
        message = data.get("message", info.get("message", ""))
        exc = make_error(int(data.get("code", 0)), str(message), data.get("data"))
        if data.get("progress"):
            vars(exc)[_PROGRESS] = list(data["progress"])
        return exc


def _progress_event(progress: float, total: float | None, message: str | None) -> Json:
    event: Json = {"progress": progress}
    if total is not None:
        event["total"] = total
    if message is not None:
        event["message"] = message
    return event


async def _fire(callback: ProgressFn | None, events: Sequence[Json]) -> None:
    """Re-fire recorded progress to ``callback``, in order (its errors are logged, as live)."""
    if callback is None:
        return
    for event in events:
        try:
            await callback(float(event["progress"]), event.get("total"), event.get("message"))
        except Exception:
            logger.exception("progress callback raised")


def _plausible_initialize(raw: Any, sent: Json) -> Any:
    """A recorded initialize result that this SDK accepts: a protocol version it does not
    know (recorded under another mcp major) becomes the version this client asked for."""
    if not isinstance(raw, dict) or raw.get("protocolVersion") in handshake_versions():
        return raw
    asked = (sent.get("params") or {}).get("protocolVersion")
    return {**raw, "protocolVersion": asked or handshake_versions()[-1]}


class RecordingClientSession(ClientSession):
    """A ``ClientSession`` whose requests go through a cassette, on ``channel``.

    Construct it like a ClientSession (over any transport's stream pair, or in 2.x with
    ``dispatcher=``) plus ``cassette=``; or turn an existing, not yet initialized session
    into one with :meth:`from_session`. In ``replay`` mode nothing reaches the streams:
    requests are served from the cassette and notifications are dropped.
    """

    _classes: ClassVar[dict[type[Any], type[Any]]] = {}

    def __init__(self, *args: Any, cassette: Cassette, channel: str = CHANNEL, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.cassette = cassette
        self.channel = channel

    @classmethod
    def from_session(
        cls, session: ClientSession, cassette: Cassette, *, channel: str = CHANNEL
    ) -> RecordingClientSession:
        """Make ``session`` (a ClientSession, or a subclass of it) record through
        ``cassette`` from now on; call it before the session sends anything."""
        if not isinstance(session, ClientSession):
            raise TypeError(f"from_session takes a ClientSession, not {session!r}")
        if not isinstance(session, RecordingClientSession):
            kind = type(session)
            if kind is ClientSession:
                session.__class__ = cls
            else:  # a subclass keeps its own overrides, under ours
                name = f"Recording{kind.__name__}"
                session.__class__ = cls._classes.setdefault(kind, type(name, (cls, kind), {}))
        assert isinstance(session, RecordingClientSession)
        session.cassette = cassette
        session.channel = channel
        return session

    @property
    def replaying(self) -> bool:
        """True when nothing goes to the server (the cassette is in ``replay`` mode)."""
        return self.cassette.mode is Mode.REPLAY

    async def send_request(
        self,
        request: Any,
        result_type: Any,
        request_read_timeout_seconds: Any = None,
        metadata: Any = None,
        progress_callback: Any = None,
    ) -> Any:
        """Serve ``request`` from the cassette, or send it and record the result."""
        __tracebackhide__ = True  # pytest: show the caller, not this frame
        sent: Json = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        key = request_dict(sent)
        send = super().send_request
        errors = MCPErrors()
        live_result: list[Any] = []

        async def tee(progress: float, total: float | None, message: str | None) -> None:
            errors.progress.append(_progress_event(progress, total, message))  # arrival order
            await progress_callback(progress, total, message)

        async def live() -> Json:
            result = await send(
                request,
                result_type,
                request_read_timeout_seconds=request_read_timeout_seconds,
                metadata=metadata,
                progress_callback=tee if progress_callback is not None else None,
            )
            await anyio.lowlevel.checkpoint()  # 2.x delivers progress in tasks of its own
            live_result.append(result)
            response: Json = {"result": dump_model(result)}
            if errors.progress:
                response["progress"] = list(errors.progress)
            return response

        try:
            response = await self._through(key, live, errors)
        except Exception as exc:
            await _fire(progress_callback, getattr(exc, _PROGRESS, ()))
            raise
        if live_result:
            return live_result[0]
        await _fire(progress_callback, response.get("progress") or ())
        raw = response.get("result")
        if key["method"] == "initialize":
            raw = _plausible_initialize(raw, sent)
        return validate_result(result_type, raw)

    async def _through(
        self, key: Json, live: Callable[[], Awaitable[Json]], errors: MCPErrors
    ) -> Json:
        """The response dict of ``key`` from the cassette, or from ``live``; the handshake
        goes live whenever a server is connected (then the dict is empty: ``live`` keeps
        what it got)."""
        if key["method"] in HANDSHAKE and not self.replaying:
            await self._live_handshake(key, live, errors)
            return {}
        return await self.cassette.acall(key, live=live, channel=self.channel, errors=errors)

    async def _live_handshake(
        self, key: Json, live: Callable[[], Awaitable[Json]], errors: MCPErrors
    ) -> None:
        """The handshake always reaches a connected server (it must know the client); the
        cassette records it, or in ``append`` mode checks it against the recording."""
        ran = False

        async def once() -> Json:
            nonlocal ran
            ran = True
            return await live()

        try:
            await self.cassette.acall(key, live=once, channel=self.channel, errors=errors)
        except Exception as exc:
            served = isinstance(exc, RecordedError) or not isinstance(exc, CassetteError)
            if ran or not served:
                raise
        if not ran:  # served from the recording (append): the live server still decides
            await live()

    async def send_notification(self, notification: Any, *args: Any, **kwargs: Any) -> None:
        """Send a notification, unless replaying (then there is nobody to tell)."""
        if self.replaying:
            return
        await super().send_notification(notification, *args, **kwargs)

    async def send_discover(self, version: str) -> dict[str, Any]:
        """mcp 2.x's ``server/discover`` probe (sent past ``send_request``), recorded too."""
        key: Json = {"method": "server/discover"}
        send = super().send_discover
        raw: list[dict[str, Any]] = []

        async def live() -> Json:
            raw.append(await send(version))
            return {"result": raw[-1]}

        response = await self._through(key, live, MCPErrors())
        return raw[-1] if raw else dict(response["result"])


@asynccontextmanager
async def mcp_session(
    cas: Cassette,
    server: Any = None,
    *,
    channel: str = CHANNEL,
    initialize: bool = True,
    **session_kwargs: Any,
) -> AsyncIterator[RecordingClientSession]:
    """An initialized :class:`RecordingClientSession` on ``server``, recording through
    ``cas``; in ``replay`` mode it connects to no server at all (``server`` may be None).

    ``server``: ``mcp.StdioServerParameters`` (the server is started, and stopped on exit),
    a streamable-HTTP URL, or any client transport (an async context manager that yields
    ``(read, write, ...)``, such as ``mcp.client.sse.sse_client(url)``). ``session_kwargs``
    go to ``ClientSession`` (callbacks, ``client_info``, ``read_timeout_seconds``, ...).

    The handshake is ``initialize`` (both majors speak it, so the cassette replays under
    either); with ``initialize=False`` the session is returned un-initialized, e.g. to call
    2.x's ``session.discover()`` instead (a cassette that only 2.x replays).
    """
    async with single_errors(), AsyncExitStack() as stack:
        if cas.mode is Mode.REPLAY:
            streams = await stack.enter_async_context(idle_transport())
        else:
            streams = await stack.enter_async_context(transport(server))
        session = RecordingClientSession(
            streams[0], streams[1], cassette=cas, channel=channel, **session_kwargs
        )
        await stack.enter_async_context(session)
        if initialize:
            await session.initialize()
        yield session


@asynccontextmanager
async def recording_client(
    cas: Cassette, server: Any = None, *, channel: str = CHANNEL, **client_kwargs: Any
) -> AsyncIterator[Any]:
    """mcp 2.x only: an entered ``mcp.Client`` on ``server`` whose session is a
    :class:`RecordingClientSession`; in ``replay`` mode it connects to no server.

    ``client_kwargs`` go to ``mcp.Client``; its response cache defaults to off here
    (``cache=None``), because a cache that expires by the clock would make the recorded
    requests depend on timing. It handshakes as the Client does (``mode="auto"``:
    ``server/discover``, then ``initialize`` on a legacy server), so a cassette it records
    replays only under 2.x; :func:`mcp_session` records one that both majors replay.
    """
    import mcp

    client_class = getattr(mcp, "Client", None)
    if client_class is None:
        raise CassetteError("mcp.Client is new in mcp 2; under mcp 1.x use mcp_session()")
    from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

    client_kwargs.setdefault("cache", None)
    replaying = cas.mode is Mode.REPLAY
    if server is None and not replaying:
        transport(server)  # raises: recording needs a server
    client = client_class("http://127.0.0.1:9/mcp" if server is None else server, **client_kwargs)
    build = client._build_session

    async def build_session(exit_stack: AsyncExitStack) -> ClientSession:
        session = await build(exit_stack)
        return RecordingClientSession.from_session(session, cas, channel=channel)

    async def connect_nowhere(exit_stack: AsyncExitStack, *args: Any) -> Any:
        read, write = await exit_stack.enter_async_context(idle_transport())
        return JSONRPCDispatcher(read, write)

    vars(client)["_build_session"] = build_session
    if replaying:
        vars(client)["_connect"] = connect_nowhere
    async with single_errors(), client:
        yield client
