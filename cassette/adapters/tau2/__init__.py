"""Record and replay the LLM calls of the real tau2-bench engine: ``patch_tau2(cas)``
(docs/adapters/tau2.md) replaces ``tau2.utils.llm_utils.generate`` everywhere; the episode
is ``"<domain>/<task id>/trial-<n>"``, the channel the caller (``agent``, ``user``, ...)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import importlib
import inspect
import json
import random
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from types import ModuleType
from typing import Any

from ...errors import CassetteError, RecordedError
from ...replay.cassette import Cassette
from ...replay.context import current_episode, episode
from ...types import Json
from .._common.patches import ModulePatches, module_values
from ..litellm import _request as litellm_request
from ..litellm._errors import LiteLLMErrors

__all__ = ["CHANNELS", "HOLDERS", "Tau2Patch", "env_index_for", "patch_tau2", "trial_for_seed"]

DEFAULT_SEED = 300  # run_tasks' default
# Modules that hold ``generate`` by name (interface_agent is not loaded by ``import tau2.run``).
HOLDERS = (
    "tau2.run", "tau2.agent.llm_agent", "tau2.user.user_simulator",
    "tau2.evaluator.evaluator_nl_assertions", "tau2.environment.utils.interface_agent",
)  # fmt: skip
# Modules that make ids with uuid.uuid4() that reach the model (telecom's bill ids).
UUID_USERS = ("tau2.domains.telecom.tools",)
# Caller module (or package) -> channel; the longest matching prefix wins, else "llm".
CHANNELS: dict[str, str] = {
    "tau2.agent": "agent",
    "tau2.gym": "agent",
    "tau2.user": "user",
    "tau2.evaluator": "judge",
    "tau2.orchestrator": "judge",  # the repetition judge imports generate when it runs
    "tau2.environment.utils.interface_agent": "interface",
}
_ERRORS: ContextVar[list[BaseException] | None] = ContextVar("cassette_tau2_errors", default=None)


def _tau2(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != "tau2":  # tau2 is there; a module of it or of its own is missing
            raise
        raise ModuleNotFoundError(
            "patch_tau2 needs tau2-bench: pip install 'rollout-cassette[tau2]'", name="tau2"
        ) from None


def env_index_for(domain: str, task_id: str, trial: int) -> str:
    """The episode key of one task and trial, e.g. ``"mock/create_task_1/trial-0"``."""
    return f"{domain}/{task_id}/trial-{trial}"


def trial_for_seed(seed: int, base_seed: int = DEFAULT_SEED, limit: int = 1000) -> int | None:
    """The trial whose seed ``run_tasks(seed=base_seed)`` made ``seed``, or None."""
    rng = random.Random(base_seed)
    for trial in range(limit):
        if rng.randint(0, 1000000) == seed:  # as run_tasks: random.seed(seed); randint(...)
            return trial
    return None


def build_request(
    model: str, messages: list[Any], tools: Any, tool_choice: Any, kwargs: Mapping[str, Any]
) -> Json:
    """The request of one ``generate`` call: that of the ``litellm.completion`` it makes."""
    arguments: Json = {
        "model": model,
        "messages": _tau2("tau2.utils.llm_utils").to_litellm_messages(messages),
        "tools": [tool.openai_schema for tool in tools] if tools else None,
        "tool_choice": (tool_choice or "auto") if tools else tool_choice,
    }
    return litellm_request.build_request({**kwargs, **arguments})


def response_from_message(message: Any, model: str) -> Json:
    """A response dict from tau2's AssistantMessage (its message as the next request sends it)."""
    as_sent = _tau2("tau2.utils.llm_utils").to_litellm_messages([message])[0]
    raw = message.raw_data if isinstance(message.raw_data, dict) else {}
    choice = {"index": 0, "message": as_sent, "finish_reason": raw.get("finish_reason")}
    return {"model": model, "choices": [choice], "usage": message.usage,
            "cost": message.cost, "raw_data": message.raw_data}  # fmt: skip


def _arguments(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def message_from_response(response: Json) -> Any:
    """tau2's AssistantMessage from a response dict (a fresh timestamp, as a live call)."""
    msg_mod = _tau2("tau2.data_model.message")
    message = response["choices"][0]["message"]
    calls = [
        msg_mod.ToolCall(id=call.get("id") or "", name=call["function"]["name"],
                         arguments=_arguments(call["function"].get("arguments")))
        for call in message.get("tool_calls") or []
    ]  # fmt: skip
    return msg_mod.AssistantMessage(
        role="assistant", content=message.get("content"), tool_calls=calls or None,
        cost=response.get("cost"), usage=response.get("usage"), raw_data=response.get("raw_data"),
    )  # fmt: skip


def message_from_openai(obj: Any) -> Any:
    """tau2's AssistantMessage from an OpenAI-style chat completion (dict or SDK object)."""
    dump = getattr(obj, "model_dump", None)
    data = obj if isinstance(obj, dict) else dump(mode="json") if callable(dump) else None
    if not isinstance(data, dict):
        raise CassetteError(
            f"generate= returned {type(obj).__name__}; it must return an OpenAI-style chat "
            "completion (a dict, or a pydantic model such as openai's ChatCompletion)"
        )
    choice, usage = data["choices"][0], data.get("usage")
    if usage:
        usage = {k: usage.get(k) for k in ("completion_tokens", "prompt_tokens")}
    response = {"choices": [choice], "usage": usage or None, "raw_data": choice}
    return message_from_response({**response, "cost": data.get("cost", 0.0)})


def _run(result: Any) -> Any:
    """``result``, awaited on a loop of its own (the thread's is left alone)."""
    if not inspect.isawaitable(result):
        return result
    with contextlib.closing(asyncio.new_event_loop()) as loop:
        return loop.run_until_complete(result)


def _resolve_generate(generate: Any) -> Callable[..., Any] | None:
    chat = getattr(generate, "chat", None)  # an OpenAI client: use chat.completions.create
    found = getattr(getattr(chat, "completions", None), "create", generate)
    if found is None or callable(found):
        return found  # type: ignore[no-any-return]
    raise TypeError(f"generate= must be a callable or an OpenAI client, not {generate!r}")


class Tau2Patch:
    """What :func:`patch_tau2` changed and counted; yielded by it."""

    def __init__(
        self, cas: Cassette, generate: Any = None, channels: Mapping[str, str] | None = None
    ) -> None:
        self.cas = cas
        self.channels = {**CHANNELS, **(channels or {})}
        self.custom = _resolve_generate(generate)
        self.original: Callable[..., Any] | None = None
        self.patches = ModulePatches()
        self.failures: list[BaseException] = []  # cassette errors, raised after run_tasks
        self.calls = self.live_calls = 0
        self._trials: dict[int, int] = {}  # seed -> trial, from run_tasks' arguments
        self._ids: dict[int | str, int] = {}  # uuid4 calls per episode
        self._lock = threading.Lock()

    def channel_for(self, module: str) -> str:
        """The channel of calls made from ``module``: the longest prefix in ``channels``."""
        hits = [p for p in self.channels if module == p or module.startswith(p + ".")]
        return self.channels[max(hits, key=len)] if hits else "llm"

    def generate(
        self, channel: str, model: str, messages: list[Any], tools: Any, tool_choice: Any,
        kwargs: dict[str, Any],
    ) -> Any:  # fmt: skip
        request = build_request(model, messages, tools, tool_choice, kwargs)

        def live() -> Json:
            with self._lock:
                self.live_calls += 1
            if self.custom is None:
                assert self.original is not None
                message = self.original(model, messages, tools, tool_choice, **kwargs)
            else:
                message = message_from_openai(_run(self.custom(**request)))
            return response_from_message(message, model)

        with self._lock:
            self.calls += 1
        try:
            response = self.cas.call(request, live, channel=channel, errors=LiteLLMErrors())
        except CassetteError as exc:
            stash = _ERRORS.get()
            if stash is not None and not isinstance(exc, RecordedError):
                stash.append(exc)  # raised again after the episode, should tau2 swallow it
            raise
        return message_from_response(response)

    def _generate_wrapper(self, channel: str | None) -> Callable[..., Any]:
        def generate(
            model: str, messages: list[Any], tools: Any = None, tool_choice: Any = None,
            **kwargs: Any,
        ) -> Any:  # fmt: skip
            ch = channel or self.channel_for(sys._getframe(1).f_globals.get("__name__", ""))
            return self.generate(ch, model, messages, tools, tool_choice, kwargs)

        assert self.original is not None
        return functools.wraps(self.original)(generate)

    def uuid4(self) -> uuid.UUID:
        """In an episode, the same ids in every run (as if seeded by the episode)."""
        env = current_episode()
        if env is None:
            return uuid.uuid4()
        with self._lock:
            n = self._ids[env] = self._ids.get(env, -1) + 1
        return uuid.UUID(bytes=hashlib.sha256(f"{env}:{n}".encode()).digest()[:16], version=4)

    def _env_index(self, domain: str, task_id: str, seed: Any) -> int | str:
        with self._lock:
            trial = 0 if seed is None else self._trials.get(seed)
        trial = trial_for_seed(seed) if trial is None else trial
        if trial is None:  # a seed that run_tasks did not make
            return f"{domain}/{task_id}/seed-{seed}"
        return env_index_for(domain, task_id, trial)

    def _failed(self, env: int | str, exc: Exception) -> None:
        """A cassette error is raised again after run_tasks; another is the episode's outcome."""
        if not isinstance(exc, CassetteError):
            error = {"error": f"{type(exc).__name__}: {exc}"}
            self.cas.outcome(env, reward=None, terminated=False, info=error)
        elif not isinstance(exc, RecordedError):
            with self._lock:
                self.failures.append(exc)

    def _run_task_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        @functools.wraps(original)
        def run_task(*args: Any, **kwargs: Any) -> Any:
            a = signature.bind(*args, **kwargs).arguments
            env = current_episode()
            if env is None:
                env = self._env_index(str(a["domain"]), str(a["task"].id), a.get("seed"))
            errors: list[BaseException] = []
            token = _ERRORS.set(errors)
            try:
                with episode(env):
                    simulation = original(*args, **kwargs)
                if errors:  # a cassette error that tau2 caught (its repetition judge does)
                    raise errors[0]
            except Exception as exc:
                self._failed(env, exc)
                raise
            finally:
                _ERRORS.reset(token)
            if simulation.reward_info is not None:
                info = simulation.reward_info.model_dump(mode="json")
                self.cas.outcome(env, reward=info.get("reward"), terminated=True, info=info)
            return simulation

        return run_task

    def _run_tasks_wrapper(self, original: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(original)

        @functools.wraps(original)
        def run_tasks(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            seed, trials = bound.arguments.get("seed"), bound.arguments.get("num_trials")
            rng = random.Random(seed)  # the seeds run_tasks gives its trials
            with self._lock:
                if seed is not None and isinstance(trials, int):
                    for trial in range(trials):
                        self._trials.setdefault(rng.randint(0, 1000000), trial)
                start = len(self.failures)
            results = original(*args, **kwargs)
            with self._lock:
                failed = self.failures[start:]
            if failed:  # run_tasks(skip_failed_samples=True) turned it into a skipped sample
                raise failed[0]
            return results

        return run_tasks

    def install(self) -> None:
        llm_utils = _tau2("tau2.utils.llm_utils")
        for name in HOLDERS:
            _tau2(name)
        current = llm_utils.generate
        if ModulePatches.wrapper(current):
            raise CassetteError("patch_tau2 is already active; leave the outer one first")
        self.original = current
        for name, module, attr, value in module_values():
            if value is current:  # the module's own reference gets its caller's channel
                channel = None if module is llm_utils else self.channel_for(name)
                self.patches.set(module, attr, self._generate_wrapper(channel))
        self._patch_uuid()
        run = sys.modules["tau2.run"]
        self.patches.set(run, "run_task", self._run_task_wrapper(run.run_task))
        self.patches.set(run, "run_tasks", self._run_tasks_wrapper(run.run_tasks))

    def _patch_uuid(self) -> None:
        shim = ModuleType("uuid")
        vars(shim).update(vars(uuid), uuid4=self.uuid4)
        for name in UUID_USERS:
            with contextlib.suppress(ImportError):
                if vars(_tau2(name)).get("uuid") is uuid:
                    self.patches.set(sys.modules[name], "uuid", shim)


@contextlib.contextmanager
def patch_tau2(
    cas: Cassette, generate: Any = None, *, channels: Mapping[str, str] | None = None
) -> Iterator[Tau2Patch]:
    """Route tau2's LLM calls through ``cas`` inside the block, restored on exit. To record,
    ``generate`` (None: tau2's own) is a callable (sync or async) taking the request as
    keywords and returning an OpenAI-style chat completion, or an OpenAI client.
    ``channels`` adds or overrides module -> channel."""
    patch = Tau2Patch(cas, generate, channels)
    try:
        patch.install()
        yield patch
    finally:
        patch.patches.restore()
