"""The result of a diff as data: :class:`RunDiff`, its :class:`EpisodeDiff` and
:class:`Divergence` records, each run's :class:`RunSummary`, :class:`ToolCall`, and the
records of the analysis (:class:`PairedStats`, :class:`AlignedCall`, :class:`CauseGroup`,
:class:`NoiseFloor`), which the modules that compute them import from here.

Every record has ``to_dict()``, a JSON-able dict (what ``cassette diff --format json``
prints); the report renderers in ``cassette.diff.report`` read the records directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

import orjson

from ..storage.index import Index
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
]

Status = Literal["identical", "diverged", "only_a", "only_b"]
Op = Literal["same", "changed", "deleted", "inserted"]
SEED = 0
BOOTSTRAP_RESAMPLES = 2000
_NO_JSON = {"json": False}  # fields left out of to_dict()


def _jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and isinstance(obj, _Data):
        out = {f.name: _jsonable(getattr(obj, f.name)) for f in fields(obj) if not f.metadata}
        out.update((name, getattr(obj, name)) for name in obj._extra)
        return out
    return [_jsonable(v) for v in obj] if isinstance(obj, list) else obj


class _Data:
    _extra: tuple[str, ...] = ()

    def to_dict(self) -> Json:
        """A JSON-able dict (what ``--format json`` prints)."""
        return dict(_jsonable(self))


@dataclass
class ToolCall(_Data):
    """One tool call the model asked for: name and arguments (parsed when JSON)."""

    channel: str
    step: int
    name: str
    arguments: Any

    def signature(self, width: int = 60) -> str:
        args = self.arguments
        text = args if isinstance(args, str) else orjson.dumps(args).decode()
        return f"{self.name}({text if len(text) <= width else text[: width - 1] + '…'})"


@dataclass
class Divergence(_Data):
    """Where an episode's two trajectories first part.

    ``part`` is ``request`` or ``response`` (errors count as responses), ``step`` when the
    step was recorded on one side only, ``outcome`` when only the outcome differs.
    ``path`` is from the step's root, e.g.
    ``response.choices[0].message.tool_calls[0].function.arguments.city``.
    """

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


@dataclass
class AlignedCall(_Data):
    """One row of an alignment: ``a`` and ``b`` index the episode's tool_calls_a / _b."""

    op: Op
    a: int | None
    b: int | None


@dataclass
class CauseGroup(_Data):
    """Episodes that diverged for one cause: how many, which, the commonest paths, and
    the sentence that says it (``cassette.diff.causes.sentence``)."""

    cause: str
    count: int
    paths: dict[str, int] = field(default_factory=dict)
    episodes: list[EnvIndex] = field(default_factory=list)
    text: str = ""


@dataclass
class NoiseMetric(_Data):
    """One metric of A vs B (``observed``) against A vs A2 (``noise``)."""

    metric: str
    unit: str  # "reward", "share" (0..1) or "percent"
    observed: float | None
    noise: float | None
    _extra = ("excess", "exceeds")

    @property
    def excess(self) -> float | None:
        if self.observed is None or self.noise is None:
            return None
        return round(abs(self.observed) - abs(self.noise), 12)

    @property
    def exceeds(self) -> bool | None:
        excess = self.excess
        return None if excess is None else excess > 0


@dataclass
class NoiseFloor(_Data):
    """Every metric of A vs B set against the same metric of A vs ``baseline`` (A2)."""

    baseline: str
    metrics: list[NoiseMetric] = field(default_factory=list)


@dataclass
class PassK(_Data):
    """pass^k of each run (the mean over tasks of C(successes, k) / C(trials, k))."""

    k: int
    a: float | None
    b: float | None
    _extra = ("delta",)

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass
class Significance(_Data):
    """One significance test: its name, method, statistic and two-sided p-value."""

    name: str
    method: str
    statistic: float
    p_value: float


@dataclass
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

    @property
    def significant(self) -> bool:
        p = self.p_value
        return p is not None and p < 0.05


@dataclass
class EpisodeDiff(_Data):
    """One episode aligned across both runs."""

    env_index: EnvIndex
    status: Status
    divergence: Divergence | None = None
    reward_a: float | None = None
    reward_b: float | None = None
    steps_a: int = 0
    steps_b: int = 0
    tool_calls_a: list[ToolCall] = field(default_factory=list)
    tool_calls_b: list[ToolCall] = field(default_factory=list)
    # why it diverged (cassette.diff.causes), and both tool-call sequences aligned
    cause: str | None = None
    alignment: list[AlignedCall] = field(default_factory=list)
    # where B (or A) forked from its base (cassette.replay.fork): base, base_run, channel, step, why
    fork: Json | None = None
    _extra = ("delta", "change")

    @property
    def delta(self) -> float | None:
        """reward B - reward A, when both runs have a reward for this episode."""
        if self.reward_a is None or self.reward_b is None:
            return None
        return self.reward_b - self.reward_a

    @property
    def at_fork_point(self) -> bool:
        """Whether the first divergence is the step where the episode forked."""
        fork, d = self.fork, self.divergence
        return (
            fork is not None
            and d is not None
            and (d.channel, d.step)
            == (
                fork.get("channel"),
                fork.get("step"),
            )
        )

    @property
    def change(self) -> Literal["improved", "regressed", "unchanged"] | None:
        d = self.delta
        if d is None:
            return None
        return "improved" if d > 1e-12 else "regressed" if d < -1e-12 else "unchanged"


@dataclass
class RunSummary(_Data):
    """Totals of one run (over the episodes that were diffed)."""

    label: str
    episodes: int = 0
    interactions: int = 0
    rewarded: int = 0
    mean_reward: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost: float | None = None  # None: no interaction recorded a cost


@dataclass
class RunDiff(_Data):
    """The diff of two runs. ``equivalent``: no episode diverged or is on one side only."""

    a: RunSummary
    b: RunSummary
    episodes: list[EpisodeDiff]
    ignored: list[str]
    volatile_seen: list[str]
    # paired statistics, grouped causes, and (with a second run of A) the noise floor
    stats: PairedStats | None = None
    causes: list[CauseGroup] = field(default_factory=list)
    noise: NoiseFloor | None = None
    # the loaded runs, for renderers that show whole trajectories (not part of to_dict)
    index_a: Index | None = field(default=None, repr=False, compare=False, metadata=_NO_JSON)
    index_b: Index | None = field(default=None, repr=False, compare=False, metadata=_NO_JSON)
    _extra = ("equivalent", "counts", "forks")

    def _count(self, attr: str, value: str) -> int:
        return sum(1 for e in self.episodes if getattr(e, attr) == value)

    @property
    def counts(self) -> dict[str, int]:
        """identical / diverged / only_a / only_b, and improved / regressed / unchanged."""
        out = {s: self._count("status", s) for s in ("identical", "diverged", "only_a", "only_b")}
        out.update({c: self._count("change", c) for c in ("improved", "regressed", "unchanged")})
        return out

    @property
    def forks(self) -> dict[str, int]:
        """Episodes forked from a base, and those whose first divergence is the fork point."""
        forked = [e for e in self.episodes if e.fork is not None]
        return {"forked": len(forked), "at_fork_point": sum(e.at_fork_point for e in forked)}

    @property
    def equivalent(self) -> bool:
        return all(e.status == "identical" for e in self.episodes)

    def episode(self, env_index: EnvIndex) -> EpisodeDiff:
        for ep in self.episodes:
            if ep.env_index == env_index and type(ep.env_index) is type(env_index):
                return ep
        raise KeyError(env_index)

    def to_dict(self) -> Json:
        out: Json = {"format": "rollout-cassette/diff", "version": 1}
        out.update(_jsonable(self))
        return out
