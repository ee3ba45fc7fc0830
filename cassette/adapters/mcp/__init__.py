"""Record and replay an agent's MCP traffic: ``mcp_session(cas, server)`` (docs/adapters/mcp.md).
Each request is one interaction on channel ``"mcp"``, the same under mcp 1.x and 2.x."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, ClassVar

import anyio.lowlevel
from mcp import ClientSession
from pydantic import BaseModel, TypeAdapter

from ...errors import CassetteError, RecordedError
from ...replay.cassette import Cassette, Mode
from ...types import Json
from ._compat import (
    MAJOR,
    PROGRESS,
    MCPError,
    MCPErrors,
    handshake_versions,
    idle_transport,
    normalise_uri,
    single_errors,
    transport,
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

CHANNEL = "mcp"
HANDSHAKE = frozenset({"initialize", "server/discover"})
logger = logging.getLogger(__name__)


def request_dict(request: Any) -> Json:
    """The request dict of an MCP request (a model or its wire form)."""
    data: Json = (
        request.model_dump(by_alias=True, mode="json", exclude_none=True)
        if isinstance(request, BaseModel)
        else dict(request)
    )
    key: Json = {"method": str(data.get("method"))}
    if key["method"] in HANDSHAKE:
        return key
    params = dict(data.get("params") or {})
    params.pop("_meta", None)
    if "uri" in params and key["method"].startswith("resources/"):
        params["uri"] = normalise_uri(params["uri"])
    return key | ({"params": params} if params else {})


async def _fire(callback: Any, events: Sequence[Json]) -> None:
    """Re-fire recorded progress to ``callback``, in order (its errors are logged, as live)."""
    for event in events if callback is not None else ():
        try:
            await callback(float(event["progress"]), event.get("total"), event.get("message"))
        except Exception:
            logger.exception("progress callback raised")


def _plausible_initialize(raw: Any, sent: Json) -> Any:
    """A recorded initialize result with a protocol version this SDK accepts."""
    if not isinstance(raw, dict) or raw.get("protocolVersion") in handshake_versions():
        return raw
    asked = (sent.get("params") or {}).get("protocolVersion")
    return {**raw, "protocolVersion": asked or handshake_versions()[-1]}


class RecordingClientSession(ClientSession):
    """A ``ClientSession`` whose requests go through ``cassette`` on ``channel`` (or made
    from one by :meth:`from_session`); in ``replay`` mode nothing reaches the streams."""

    _classes: ClassVar[dict[type[Any], type[Any]]] = {}

    def __init__(self, *args: Any, cassette: Cassette, channel: str = CHANNEL, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.cassette, self.channel = cassette, channel

    @classmethod
    def from_session(
        cls, session: ClientSession, cassette: Cassette, *, channel: str = CHANNEL
    ) -> RecordingClientSession:
        """Make ``session`` (not yet initialized) record through ``cassette`` from now on; a
        subclass of ClientSession keeps its own overrides."""
        if not isinstance(session, ClientSession):
            raise TypeError(f"from_session takes a ClientSession, not {session!r}")
        kind = type(session)
        if not issubclass(kind, RecordingClientSession):
            if kind is not ClientSession and kind not in cls._classes:
                cls._classes[kind] = type(f"Recording{kind.__name__}", (cls, kind), {})
            session.__class__ = cls._classes.get(kind, cls)
        assert isinstance(session, RecordingClientSession)
        session.cassette, session.channel = cassette, channel
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
        key, send, errors = request_dict(sent), super().send_request, MCPErrors()
        got: list[Any] = []

        async def tee(progress: float, total: float | None, message: str | None) -> None:
            event = {"progress": progress, "total": total, "message": message}
            errors.progress.append({k: v for k, v in event.items() if v is not None})
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
            got.append(result)
            dumped = result.model_dump(by_alias=True, mode="json", exclude_unset=True)
            progress = {"progress": list(errors.progress)} if errors.progress else {}
            return {"result": dumped} | progress

        try:
            response = await self._through(key, live, errors)
        except Exception as exc:
            await _fire(progress_callback, getattr(exc, PROGRESS, ()))
            raise
        if got:
            return got[0]
        await _fire(progress_callback, response.get("progress") or ())
        raw = response.get("result")
        if key["method"] == "initialize":
            raw = _plausible_initialize(raw, sent)
        if isinstance(result_type, TypeAdapter):
            return result_type.validate_python(raw)
        return result_type.model_validate(raw)

    async def _through(
        self, key: Json, live: Callable[[], Awaitable[Json]], errors: MCPErrors
    ) -> Json:
        """The response dict of ``key``; a handshake always reaches a connected server."""
        if key["method"] not in HANDSHAKE or self.replaying:
            return await self.cassette.acall(key, live=live, channel=self.channel, errors=errors)
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
        return {}

    async def send_notification(self, notification: Any, *args: Any, **kwargs: Any) -> None:
        """Send a notification, unless replaying (then there is nobody to tell)."""
        if not self.replaying:
            await super().send_notification(notification, *args, **kwargs)

    async def send_discover(self, version: str) -> dict[str, Any]:
        """mcp 2.x's ``server/discover`` probe (sent past ``send_request``), recorded too."""
        send, raw = super().send_discover, []

        async def live() -> Json:
            raw.append(await send(version))
            return {"result": raw[-1]}

        response = await self._through({"method": "server/discover"}, live, MCPErrors())
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
    """An initialized :class:`RecordingClientSession` on ``server`` (``StdioServerParameters``,
    a streamable-HTTP URL or a client transport) recording through ``cas``; in ``replay``
    mode it connects to no server. ``session_kwargs`` go to ``ClientSession``;
    ``initialize=False`` leaves the handshake to the caller."""
    async with single_errors(), AsyncExitStack() as stack:
        connect = idle_transport() if cas.mode is Mode.REPLAY else transport(server)
        read, write, *_ = await stack.enter_async_context(connect)
        session = RecordingClientSession(
            read, write, cassette=cas, channel=channel, **session_kwargs
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
    :class:`RecordingClientSession`; in ``replay`` mode it connects to no server. Its
    response cache is off by default (one that expires by the clock makes requests depend
    on timing); it handshakes with ``server/discover``, so only 2.x replays its cassette."""
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
