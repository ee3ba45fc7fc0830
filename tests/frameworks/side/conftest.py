"""The framework scenarios (run in the side venv by tests/frameworks/test_frameworks.py)."""

from __future__ import annotations

import asyncio
import os
import warnings
from collections.abc import Iterator

import pytest

# litellm fetches its model cost map from the network at import unless told not to
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def close_the_thread_event_loop() -> Iterator[None]:
    """litellm's sync stream calls ``asyncio.get_event_loop()`` outside any loop, which
    creates one for the thread and never closes it (a ResourceWarning once collected)."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)
