"""A process that makes calls into one cassette and reports each as it returns.

    python caller.py PATH MODE --tag T --calls N [--go FILE] [--fsize BYTES] [--bulk B]

It makes ``--calls`` calls ``cas.call(request_of(T, i))`` in episode ``T`` and prints
``DONE <i>`` (flushed) after each has returned, so a test that kills it knows which
calls completed: the pipe keeps what was printed before the kill. ``--go``: wait for
that file to exist after opening (to start several processes at once). ``--fsize``:
``RLIMIT_FSIZE`` for this process (CPython ignores ``SIGXFSZ``, so a write beyond it
fails with ``EFBIG``). Prints ``ERROR <message>`` and exits 3 on a ``CassetteError``,
``CLOSED`` after a clean close. ``--bulk``: hex digits of padding in each response.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path
from typing import Any


def request_of(tag: str, i: int) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": f"{tag} call {i}"}]}


def response_of(tag: str, i: int, bulk: int = 0) -> dict[str, Any]:
    """``bulk``: that many hex digits of padding, which compress poorly (as in a .gz)."""
    pad = hashlib.shake_256(f"{tag}-{i}".encode()).hexdigest(bulk // 2) if bulk else ""
    return {"id": f"{tag}-{i}", "content": f"answer {i} of {tag}", "pad": pad}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("mode")
    parser.add_argument("--tag", required=True)
    parser.add_argument("--calls", type=int, required=True)
    parser.add_argument("--go", default=None)
    parser.add_argument("--fsize", type=int, default=None)
    parser.add_argument("--bulk", type=int, default=0)
    args = parser.parse_args(argv)
    if args.fsize is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (args.fsize, args.fsize))

    import cassette

    try:
        cas = cassette.open(args.path, args.mode)
    except cassette.CassetteError as exc:
        print(f"ERROR {exc}", flush=True)
        return 3
    print("OPEN", flush=True)
    if args.go:
        deadline = time.monotonic() + 60
        while not Path(args.go).exists():
            if time.monotonic() > deadline:
                return 2
            time.sleep(0.001)
    try:
        with cassette.episode(args.tag):
            for i in range(args.calls):
                got = cas.call(
                    request_of(args.tag, i), live=lambda i=i: response_of(args.tag, i, args.bulk)
                )
                assert got == response_of(args.tag, i, args.bulk)
                print(f"DONE {i}", flush=True)
        cas.close()
    except cassette.CassetteError as exc:
        print(f"ERROR {exc}", flush=True)
        try:
            cas.close()
        except cassette.CassetteError as again:
            print(f"ERROR {again}", flush=True)
        return 3
    print("CLOSED", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
