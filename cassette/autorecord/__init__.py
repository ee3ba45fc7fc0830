"""Zero-code recording for ``cassette run``: the child's ``sitecustomize`` (``boot/``) calls
:func:`start`, whose import hook wraps every ``openai`` / ``anthropic`` client and patches
``litellm``; the cassette opens at the first call; :func:`stop` (at exit) undoes it all."""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING, Any

from ..replay.episodes import Conversations
from .network import NET_LOG_VARIABLE, OFFLINE_VARIABLE, count_connections, refuse_connections

if TYPE_CHECKING:
    from ..replay.cassette import Cassette

__all__ = ["AUTO_VARIABLE", "OFFLINE_VARIABLE", "active", "start", "stop"]

AUTO_VARIABLE = "CASSETTE_AUTO"  # "1": the bootstrap records the program's clients
_CLIENTS = {
    "openai": ("OpenAI", "AsyncOpenAI", "AzureOpenAI", "AsyncAzureOpenAI"),
    "anthropic": ("Anthropic", "AsyncAnthropic"),
}
_COPIES = ("copy", "with_options")  # a client built by one of these is a copy: not adopted


class _State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.cas: Cassette | None = None  # opened on first use
        self.stack = contextlib.ExitStack()  # undoes every patch
        self.started = False


_STATE = _State()


def active() -> Cassette | None:
    """The cassette the program's clients record to (opened on first use), or None."""
    if not _STATE.started:
        return None
    with _STATE.lock:
        if _STATE.cas is None:
            from ..replay.cassette import open as open_cassette

            meta = {"recorded_by": "cassette run"}
            _STATE.cas = open_cassette(meta=meta, episodes=Conversations())
        return _STATE.cas


def _is_copy() -> bool:
    """Whether the client being built is a copy (an adapter's, or a wrapped client's ``copy``)."""
    frame: FrameType | None = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("cassette.adapters") or (
            frame.f_code.co_name in _COPIES and module.startswith(tuple(_CLIENTS))
        ):
            return True
        frame = frame.f_back
    return False


def _adopt(client: Any, wrap: Callable[[Any, Any], Any]) -> None:
    """Make ``client`` itself a wrapped client: the wrapper's state moved into it."""
    cas = active()
    if cas is not None:
        wrapped = wrap(client, cas)
        client.__class__ = type(wrapped)
        vars(client).update(vars(wrapped))


def _patch_init(cls: type[Any], wrap: Callable[[Any, Any], Any]) -> None:
    """``cls()`` adopts the wrapper when the outermost ``__init__`` returns."""
    original = cls.__dict__.get("__init__")
    if original is None or getattr(original, "_cassette_auto", False):
        return
    marker = "_cassette_constructing"

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        outer = marker not in vars(self)
        if outer:
            vars(self)[marker] = True
            copy = _is_copy()
        try:
            original(self, *args, **kwargs)
        finally:
            if outer:
                vars(self).pop(marker, None)
        if outer and not copy:
            _adopt(self, wrap)

    __init__._cassette_auto = True  # type: ignore[attr-defined]
    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    cls.__init__ = __init__
    _STATE.stack.callback(setattr, cls, "__init__", original)


def _wrap(name: str, client: Any, cas: Any) -> Any:
    """``wrap_<name>`` of the adapter, imported late: the adapter may be importing the SDK now."""
    adapter = importlib.import_module(f"cassette.adapters.{name}")
    return getattr(adapter, f"wrap_{name}")(client, cas)


def _patch(name: str, module: ModuleType) -> None:
    with _STATE.lock:
        if name in _CLIENTS:
            wrap = functools.partial(_wrap, name)
            for attribute in _CLIENTS[name]:
                cls = getattr(module, attribute, None)
                if isinstance(cls, type):
                    _patch_init(cls, wrap)
        elif (cas := active()) is not None:  # litellm
            from ..adapters.litellm import patch_litellm

            _STATE.stack.enter_context(patch_litellm(cas))


class _Loader(importlib.abc.Loader):
    """Runs a module with its own loader (which the module keeps), then patches it."""

    def __init__(self, loader: importlib.abc.Loader, name: str) -> None:
        self.loader, self.name = loader, name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        _patch(self.name, module)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds ``openai``, ``anthropic`` and ``litellm`` as usual, with a loader that patches them."""

    names = frozenset({*_CLIENTS, "litellm"})

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        others = (f for f in sys.meta_path if f is not self and hasattr(f, "find_spec"))
        specs = (f.find_spec(fullname, path, target) for f in others)
        spec: importlib.machinery.ModuleSpec | None = next(filter(None, specs), None)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, fullname)
        return spec


def start() -> None:
    """Install the patches (modules imported already are patched at once)."""
    state = _STATE
    with state.lock:
        if state.started:
            return
        state.started = True
        if os.environ.get(OFFLINE_VARIABLE) == "1":
            state.stack.callback(refuse_connections())
        if os.environ.get(NET_LOG_VARIABLE):
            state.stack.callback(count_connections(Path(os.environ[NET_LOG_VARIABLE])))
        state.stack.callback(setattr, sys, "excepthook", sys.excepthook)
        sys.excepthook = _one_line(sys.excepthook)
        finder = _Finder()
        sys.meta_path.insert(0, finder)
        state.stack.callback(_unhook, finder)
        for name in _Finder.names & sys.modules.keys():
            _patch(name, sys.modules[name])
    atexit.register(_at_exit)
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _on_term)


def _unhook(finder: _Finder) -> None:
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)


def _on_term(signum: int, frame: FrameType | None) -> None:
    stop()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _one_line(hook: Callable[..., Any]) -> Callable[..., Any]:
    """``sys.excepthook`` printing a replay's miss or mismatch as one ``error:`` line."""

    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        from ..errors import CassetteMismatch, CassetteMiss

        if isinstance(value, (CassetteMiss, CassetteMismatch)):
            print(f"error: {value}", file=sys.stderr)
        else:
            hook(kind, value, tb)

    return excepthook


def _at_exit() -> None:
    """:func:`stop` at exit, aborting the cassette of a program that died of an exception."""
    failed = getattr(sys, "last_value", None)
    stop(failed if isinstance(failed, BaseException) else None)


def stop(failed: BaseException | None = None) -> None:
    """Close the cassette (abort it if the program ``failed``) and undo every patch."""
    state = _STATE
    with state.lock:
        if not state.started:
            return
        state.started = False
        try:
            state.stack.close()
        finally:
            cas, state.cas = state.cas, None
            if cas is not None and failed is None:
                cas.close()
            elif cas is not None:
                notes = len(getattr(failed, "__notes__", []))
                cas.abort(failed)  # its traceback is printed already: print the note here
                for note in getattr(failed, "__notes__", [])[notes:]:
                    print(note, file=sys.stderr)
