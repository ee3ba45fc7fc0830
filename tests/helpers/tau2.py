"""Shared set-up of the tests that drive the real tau2 engine (through litellm)."""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Iterator

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

# litellm drops the pooled httpx connections of its OpenAI clients without closing them
MARKS = [pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning")]


@pytest.fixture(scope="module", autouse=True)
def litellm_garbage() -> Iterator[None]:
    """Collect litellm's unclosed clients here, not in whichever test runs next."""
    yield
    import litellm

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "unclosed <socket.socket", ResourceWarning)
        litellm.in_memory_llm_clients_cache.flush_cache()  # type: ignore[no-untyped-call]
        gc.collect()
