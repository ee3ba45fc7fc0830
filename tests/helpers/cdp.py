"""Headless Chromium driven through the DevTools protocol over a pipe
(``--remote-debugging-pipe``: no websocket library, no port): open a page, wait for it,
evaluate JavaScript in it, press keys, and read what it logged and requested.

``with Browser() as b: page = b.open(url)`` gives a :class:`Page`; ``page.eval(js)`` returns
the value of an expression (awaited when it is a promise); ``page.errors`` holds console
errors and uncaught exceptions, ``page.requests`` every URL the page asked for.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import tempfile
import time
from typing import Any

from .browser import chromium_executable

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
]


def _high(fd: int) -> int:
    """``fd`` moved to a number above 9 (the old one closed)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class Browser:
    """One headless Chromium process with a fresh profile."""

    def __init__(self, width: int = 1280, height: int = 900) -> None:
        exe = chromium_executable()  # skips without Chromium, fails where CI requires it
        self.profile = tempfile.TemporaryDirectory(prefix="cdp-profile-")
        to_child, self._to_child = os.pipe()
        self._from_child, from_child = os.pipe()
        # the child's ends above 9, so that the shell's 3<& and 4>& never clobber one another
        to_child, from_child = (_high(fd) for fd in (to_child, from_child))
        flags = [*FLAGS, f"--user-data-dir={self.profile.name}", f"--window-size={width},{height}"]
        command = " ".join([exe, *flags, "about:blank"])
        self.proc = subprocess.Popen(
            ["bash", "-c", f"exec {command} 3<&{to_child} 4>&{from_child}"],
            pass_fds=(to_child, from_child),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError, RuntimeError, TimeoutError):
            self.send("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.profile.cleanup()

    # -- the protocol ----------------------------------------------------------------------
    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)  # type: ignore[no-any-return]

    def send(
        self, method: str, session: str | None = None, timeout: float = 60, **params: Any
    ) -> Any:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def open(self, url: str, width: int | None = None, height: int = 900) -> Page:
        """A new tab showing ``url``, once its script has set ``body[data-ready]``."""
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable", session)
        if width is not None:
            self.send(
                "Emulation.setDeviceMetricsOverride",
                session,
                width=width,
                height=height,
                deviceScaleFactor=1,
                mobile=width < 600,
            )
        page.goto(url)
        return page


class Page:
    """One tab: evaluate, press keys, and what it logged and requested."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser, self.session = browser, session

    def _events(self) -> list[dict[str, Any]]:
        return [e for e in self.browser.events if e.get("sessionId") == self.session]

    @property
    def errors(self) -> list[str]:
        out = []
        for e in self._events():
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params.get("exceptionDetails"))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(str(params["entry"].get("text")))
        return out

    @property
    def requests(self) -> list[str]:
        return [
            e["params"]["request"]["url"]
            for e in self._events()
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def eval(self, expression: str, timeout: float = 60) -> Any:
        result = self.browser.send(
            "Runtime.evaluate",
            self.session,
            timeout=timeout,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression: str, timeout: float = 30) -> None:
        """Poll ``expression`` (a DOM node counts) until it is truthy."""
        deadline = time.monotonic() + timeout
        while True:
            if self.eval(f"!!({expression})"):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"still false after {timeout}s: {expression}")
            time.sleep(0.05)

    def goto(self, url: str) -> None:
        self.browser.send("Page.navigate", self.session, url=url)
        self.wait("document.body && document.body.dataset.ready")

    def key(self, key: str) -> None:
        for kind in ("keyDown", "keyUp"):
            self.browser.send(
                "Input.dispatchKeyEvent",
                self.session,
                type=kind,
                key=key,
                text=key if len(key) == 1 and kind == "keyDown" else "",
            )

    def screenshot(self, path: str) -> None:
        import base64

        data = self.browser.send(
            "Page.captureScreenshot", self.session, format="png", captureBeyondViewport=False
        )["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))
