"""The JSON Schema (draft 2020-12) of ``cassette diff --format json``: a two-run diff
(``"format": "rollout-cassette/diff"``) or many runs against the first
(``"format": "rollout-cassette/diff-many"``). ``cassette diff --schema`` prints it."""

from __future__ import annotations

from ..types import Json
from .causes import CAUSES

__all__ = ["SCHEMA"]


def _obj(props: Json, required: list[str] | None = None) -> Json:
    return {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
        "additionalProperties": False,
    }


def _ref(name: str) -> Json:
    return {"$ref": f"#/$defs/{name}"}


def _list(item: Json) -> Json:
    return {"type": "array", "items": item}


def _all(schema: Json, names: str) -> Json:
    """The same schema for each of the space-separated ``names``."""
    return dict.fromkeys(names.split(), schema)


def _enum(names: str) -> Json:
    return {"enum": names.split()}


def _or_null(schema: Json) -> Json:
    return {"oneOf": [schema, {"type": "null"}]}


NUM_OR_NULL: Json = {"type": ["number", "null"]}
INT: Json = {"type": "integer", "minimum": 0}
STR: Json = {"type": "string"}
BOOL: Json = {"type": "boolean"}
ENV: Json = {"type": ["integer", "string"]}
STR_OR_NULL: Json = {"type": ["string", "null"]}
INT_OR_NULL: Json = {"type": ["integer", "null"]}
COUNTS = "identical diverged only_a only_b improved regressed unchanged"
CAUSE: Json = {"enum": list(CAUSES)}

DEFS: Json = {
    "run": _obj(
        {
            "label": STR,
            **_all(INT, "episodes interactions rewarded"),
            "mean_reward": NUM_OR_NULL,
            **_all(INT, "prompt_tokens completion_tokens total_tokens"),
            "cost": NUM_OR_NULL,
        }
    ),
    "divergence": _obj(
        {
            "channel": STR_OR_NULL,
            "step": INT_OR_NULL,
            "part": _enum("request response step outcome"),
            "path": STR,
            **_all({}, "a b"),
            **_all(BOOL, "a_missing b_missing"),
        }
    ),
    "tool_call": _obj({"channel": STR, "step": {"type": "integer"}, "name": STR, "arguments": {}}),
    "aligned": _obj({"op": _enum("same changed deleted inserted"), **_all(INT_OR_NULL, "a b")}),
    "fork": _obj({"base": STR, "base_run": STR_OR_NULL, "channel": STR, "step": INT, "why": STR}),
    "episode": _obj(
        {
            "env_index": ENV,
            "status": _enum("identical diverged only_a only_b"),
            "divergence": _or_null(_ref("divergence")),
            **_all(NUM_OR_NULL, "reward_a reward_b"),
            **_all(INT, "steps_a steps_b"),
            **_all(_list(_ref("tool_call")), "tool_calls_a tool_calls_b"),
            "cause": _or_null(CAUSE),
            "alignment": _list(_ref("aligned")),
            "fork": _or_null(_ref("fork")),
            "delta": NUM_OR_NULL,
            "change": {"enum": ["improved", "regressed", "unchanged", None]},
        }
    ),
    "test": _obj(
        {
            "name": {"enum": ["McNemar", "paired permutation", "Wilcoxon signed-rank"]},
            "method": STR,
            "statistic": {"type": "number"},
            "p_value": {"type": "number", "minimum": 0, "maximum": 1},
        }
    ),
    "pass_k": _obj({"k": {"type": "integer", "minimum": 1}, **_all(NUM_OR_NULL, "a b delta")}),
    "stats": _obj(
        {
            **_all(INT, "paired improved regressed unchanged still_failing"),
            "binary": BOOL,
            **_all(NUM_OR_NULL, "mean_a mean_b mean_delta ci_low ci_high"),
            "ci_level": {"type": "number"},
            "resamples": INT,
            "seed": {"type": "integer"},
            "tests": _list(_ref("test")),
            "tasks": INT,
            "pass_k": _list(_ref("pass_k")),
        }
    ),
    "cause": _obj(
        {
            "cause": CAUSE,
            "count": {"type": "integer", "minimum": 1},
            "paths": {"type": "object", "additionalProperties": {"type": "integer"}},
            "episodes": _list(ENV),
            "text": STR,
        }
    ),
    "noise": _obj(
        {
            "baseline": STR,
            "metrics": _list(
                _obj(
                    {
                        "metric": STR,
                        "unit": _enum("reward share percent"),
                        **_all(NUM_OR_NULL, "observed noise excess"),
                        "exceeds": {"type": ["boolean", "null"]},
                    }
                )
            ),
        }
    ),
    "counts": _obj(_all(INT, COUNTS)),
    "diff": _obj(
        {
            "format": {"const": "rollout-cassette/diff"},
            "version": {"const": 1},
            **_all(_ref("run"), "a b"),
            "episodes": _list(_ref("episode")),
            **_all(_list(STR), "ignored volatile_seen"),
            "stats": _or_null(_ref("stats")),
            "causes": _list(_ref("cause")),
            "noise": _or_null(_ref("noise")),
            "equivalent": BOOL,
            "counts": _ref("counts"),
            "forks": _obj({"forked": INT, "at_fork_point": INT}),
        }
    ),
    "many": _obj(
        {
            "format": {"const": "rollout-cassette/diff-many"},
            "version": {"const": 1},
            "baseline": _ref("run"),
            "noise_baseline": STR_OR_NULL,
            "equivalent": BOOL,
            "diffs": {"type": "array", "items": _ref("diff"), "minItems": 1, "maxItems": 7},
        }
    ),
}

SCHEMA: Json = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "cassette diff --format json",
    "oneOf": [_ref("diff"), _ref("many")],
    "$defs": DEFS,
}
