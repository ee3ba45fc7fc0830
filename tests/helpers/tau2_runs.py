"""Shared set-up of the tests that drive the real tau2 engine (through litellm), and tau2's
own run_tasks called as a user calls it."""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["MARKS", "MODEL", "calls_of", "litellm_garbage", "run_tasks", "transcript"]

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before litellm is imported

MODEL = "openai/scripted-model"
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


def run_tasks(
    domain: str, base_url: str | None = None, *, task_ids: list[str] | None = None,
    num_trials: int = 1, max_concurrency: int = 3, **kwargs: Any,
) -> list[Any]:  # fmt: skip
    """tau2's own run_tasks, as a user calls it (the api_base is only there when recording)."""
    import tau2.run  # type: ignore[import-untyped]

    args = {"api_base": base_url, "api_key": "dummy"} if base_url else {}
    kwargs.setdefault("skip_failed_samples", True)
    results = tau2.run.run_tasks(
        domain, tau2.run.get_tasks(domain, task_ids=task_ids), "llm_agent", "user_simulator",
        llm_agent=MODEL, llm_args_agent=dict(args), llm_user=MODEL, llm_args_user=dict(args),
        num_trials=num_trials, max_concurrency=max_concurrency, console_display=False,
        log_level="ERROR", **kwargs,
    )  # fmt: skip
    return list(results.simulations)


def calls_of(message: Any) -> Any:
    calls = getattr(message, "tool_calls", None)
    return [(c.id, c.name, c.arguments, c.requestor) for c in calls] if calls else None


def transcript(sim: Any) -> list[tuple[Any, ...]]:
    return [(m.role, getattr(m, "content", None), calls_of(m)) for m in sim.messages]
