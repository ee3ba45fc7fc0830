"""The result of a diff as pydantic dataclasses; ``to_dict()`` is what ``cassette diff
--format json`` prints, :data:`cassette.diff.schema.SCHEMA` its schema."""

from __future__ import annotations

from dataclasses import field
from typing import Annotated, Any, Literal

import orjson
from pydantic import ConfigDict, Field, computed_field
from pydantic.dataclasses import dataclass

from ..types import EnvIndex, Json

__all__ = [
    "AlignedCall",
    "CauseGroup",
    "Divergence",
    "EpisodeDiff",
    "Json",
    "NoiseFloor",
    "NoiseMetric",
    "PairedStats",
    "PassK",
    "RunDiff",
    "RunSummary",
    "Significance",
    "Status",
    "ToolCall",
    "clip",
    "minus",
]

Status = Literal["identical", "diverged", "only_a", "only_b"]
Op = Literal["same", "changed", "deleted", "inserted"]
Cause = Literal[
    "tool_schema",
    "system_prompt",
    "tool_result",
    "model_output",
    "user_message",
    "sampling",
    "model",
    "request_other",
    "steps",
    "outcome",
]
Unit = Literal["reward", "share", "percent"]
SEED = 0
BOOTSTRAP_RESAMPLES = 2000
_CONFIG = ConfigDict(
    extra="forbid", arbitrary_types_allowed=True, json_schema_serialization_defaults_required=True
)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, marked with an ellipsis."""
    return text if len(text) <= width else text[: width - 1] + "…"


def minus(a: float | None, b: float | None) -> float | None:
    """``b - a``, or None when either is None."""
    return None if a is None or b is None else b - a


class _Data:
    def to_dict(self) -> Json:
        """A JSON-able dict (what ``--format json`` prints)."""
        out: Json = self.__pydantic_serializer__.to_python(self)  # type: ignore[attr-defined]
        return out


@dataclass(config=_CONFIG)
class ToolCall(_Data):
    """One tool call the model asked for: name and arguments (parsed when JSON)."""

    channel: str
    step: int
    name: str
    arguments: Any

    def signature(self, width: int = 60) -> str:
        args = self.arguments
        text = args if isinstance(args, str) else orjson.dumps(args).decode()
        return f"{self.name}({clip(text, width)})"


@dataclass(config=_CONFIG)
class Divergence(_Data):
    """Where an episode's trajectories first part: ``request``, ``response`` (or error), a
    ``step`` on one side only, or the ``outcome``; ``path`` from the step's root."""

    channel: str | None
    step: int | None
    part: Literal["request", "response", "step", "outcome"]
    path: str
    a: Any = None
    b: Any = None
    a_missing: bool = False
    b_missing: bool = False

    @property
    def where(self) -> str:
        return "outcome" if self.step is None else f"{self.channel} step {self.step}"


@dataclass(config=_CONFIG)
class AlignedCall(_Data):
    """One row of an alignment: ``a`` and ``b`` index the episode's tool_calls_a / _b."""

    op: Op
    a: int | None
    b: int | None


@dataclass(config=_CONFIG)
class CauseGroup(_Data):
    """Episodes that diverged for one cause: how many, which, the commonest paths, a sentence."""

    cause: Cause
    count: int
    paths: dict[str, int] = field(default_factory=dict)
    episodes: list[EnvIndex] = field(default_factory=list)
    text: str = ""


@dataclass(config=_CONFIG)
class NoiseMetric(_Data):
    """One metric of A vs B (``observed``) against A vs A2 (``noise``)."""

    metric: str
    unit: Unit  # share: 0..1
    observed: float | None
    noise: float | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def excess(self) -> float | None:
        if self.observed is None or self.noise is None:
            return None
        return round(abs(self.observed) - abs(self.noise), 12)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exceeds(self) -> bool | None:
        return None if self.excess is None else self.excess > 0


@dataclass(config=_CONFIG)
class NoiseFloor(_Data):
    """Every metric of A vs B set against the same metric of A vs ``baseline`` (A2)."""

    baseline: str
    metrics: list[NoiseMetric] = field(default_factory=list)


@dataclass(config=_CONFIG)
class PassK(_Data):
    """pass^k of each run (the mean over tasks of C(successes, k) / C(trials, k))."""

    k: Annotated[int, Field(ge=1)]
    a: float | None
    b: float | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        return minus(self.a, self.b)


@dataclass(config=_CONFIG)
class Significance(_Data):
    """One significance test: its name, method, statistic and two-sided p-value."""

    name: Literal["McNemar", "paired permutation", "Wilcoxon signed-rank"]
    method: str
    statistic: float
    p_value: Annotated[float, Field(ge=0, le=1)]


@dataclass(config=_CONFIG)
class PairedStats(_Data):
    """Paired outcome statistics of B against A (episodes rewarded in both runs)."""

    paired: int = 0
    improved: int = 0
    regressed: int = 0
    unchanged: int = 0
    still_failing: int = 0
    binary: bool = False
    mean_a: float | None = None
    mean_b: float | None = None
    mean_delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float = 0.95
    resamples: int = BOOTSTRAP_RESAMPLES
    seed: int = SEED
    tests: list[Significance] = field(default_factory=list)
    tasks: int = 0
    pass_k: list[PassK] = field(default_factory=list)

    @property
    def p_value(self) -> float | None:
        """The headline test's p-value (McNemar for binary rewards, else permutation)."""
        return self.tests[0].p_value if self.tests else None


@dataclass(config=_CONFIG)
class EpisodeDiff(_Data):
    """One episode across both runs; ``fork``: its fork record, if it was forked."""

    env_index: EnvIndex
    status: Status
    divergence: Divergence | None = None
    reward_a: float | None = None
    reward_b: float | None = None
    steps_a: int = 0
    steps_b: int = 0
    tool_calls_a: list[ToolCall] = field(default_factory=list)
    tool_calls_b: list[ToolCall] = field(default_factory=list)
    cause: Cause | None = None
    alignment: list[AlignedCall] = field(default_factory=list)
    fork: Json | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def delta(self) -> float | None:
        """reward B - reward A, when both runs have a reward for this episode."""
        return minus(self.reward_a, self.reward_b)

    @property
    def at_fork_point(self) -> bool:
        """Whether the first divergence is the step where the episode forked."""
        fork, d = self.fork, self.divergence
        if fork is None or d is None:
            return False
        return (d.channel, d.step) == (fork.get("channel"), fork.get("step"))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def change(self) -> Literal["improved", "regressed", "unchanged"] | None:
        d = self.delta
        if d is None:
            return None
        return "improved" if d > 1e-12 else "regressed" if d < -1e-12 else "unchanged"


@dataclass(config=_CONFIG)
class RunSummary(_Data):
    """Totals of one run's diffed episodes; ``cost`` None: no interaction recorded one."""

    label: str
    episodes: int = 0
    interactions: int = 0
    rewarded: int = 0
    mean_reward: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None


@dataclass(config=_CONFIG)
class RunDiff(_Data):
    """The diff of two runs; ``steps``: each run's steps by episode, for trajectories."""

    format: Literal["rollout-cassette/diff"] = field(default="rollout-cassette/diff", init=False)
    version: Literal[1] = field(default=1, init=False)
    a: RunSummary
    b: RunSummary
    episodes: list[EpisodeDiff]
    ignored: list[str]
    volatile_seen: list[str]
    stats: PairedStats = field(default_factory=PairedStats)
    causes: list[CauseGroup] = field(default_factory=list)
    noise: NoiseFloor | None = None
    steps: Any = Field(default=None, exclude=True, repr=False)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def counts(self) -> dict[str, int]:
        """identical / diverged / only_a / only_b, and improved / regressed / unchanged."""
        out = dict.fromkeys(("identical", "diverged", "only_a", "only_b"), 0)
        out |= dict.fromkeys(("improved", "regressed", "unchanged"), 0)
        for e in self.episodes:
            out[e.status] += 1
            if e.change is not None:
                out[e.change] += 1
        return out

    @computed_field  # type: ignore[prop-decorator]
    @property
    def forks(self) -> dict[str, int]:
        """Episodes forked from a base, and those whose first divergence is the fork point."""
        forked = [e for e in self.episodes if e.fork is not None]
        return {"forked": len(forked), "at_fork_point": sum(e.at_fork_point for e in forked)}

    @computed_field  # type: ignore[prop-decorator]
    @property
    def equivalent(self) -> bool:
        return all(e.status == "identical" for e in self.episodes)

    def episode(self, env_index: EnvIndex) -> EpisodeDiff:
        for ep in self.episodes:
            if ep.env_index == env_index and type(ep.env_index) is type(env_index):
                return ep
        raise KeyError(env_index)
