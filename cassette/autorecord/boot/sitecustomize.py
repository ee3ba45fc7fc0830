"""Put on a program's PYTHONPATH by ``cassette run``: starts :mod:`cassette.autorecord`, then
runs the environment's own ``sitecustomize``."""

import importlib
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _boot() -> None:
    if os.environ.get("CASSETTE_AUTO") == "1":
        from cassette.autorecord import start

        start()
    # the environment's own sitecustomize, which this one shadows
    me = sys.modules.pop("sitecustomize", None)
    saved = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    try:
        importlib.import_module("sitecustomize")
    except ImportError:
        pass
    finally:
        sys.path[:] = saved
        if me is not None:
            sys.modules["sitecustomize"] = me


_boot()
