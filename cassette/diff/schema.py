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


NUM_OR_NULL: Json = {"type": ["number", "null"]}
INT: Json = {"type": "integer", "minimum": 0}
STR: Json = {"type": "string"}
BOOL: Json = {"type": "boolean"}
ENV: Json = {"type": ["integer", "string"]}
COUNTS = ("identical", "diverged", "only_a", "only_b", "improved", "regressed", "unchanged")
CAUSE: Json = {"enum": list(CAUSES)}

DEFS: Json = {
    "run": _obj(
        {
            "label": STR,
            "episodes": INT,
            "interactions": INT,
            "rewarded": INT,
            "mean_reward": NUM_OR_NULL,
            "prompt_tokens": INT,
            "completion_tokens": INT,
            "total_tokens": INT,
            "cost": NUM_OR_NULL,
        }
    ),
    "divergence": _obj(
        {
            "channel": {"type": ["string", "null"]},
            "step": {"type": ["integer", "null"]},
            "part": {"enum": ["request", "response", "step", "outcome"]},
            "path": STR,
            "a": {},
            "b": {},
            "a_missing": BOOL,
            "b_missing": BOOL,
        }
    ),
    "tool_call": _obj({"channel": STR, "step": {"type": "integer"}, "name": STR, "arguments": {}}),
    "aligned": _obj(
        {
            "op": {"enum": ["same", "changed", "deleted", "inserted"]},
            "a": {"type": ["integer", "null"]},
            "b": {"type": ["integer", "null"]},
        }
    ),
    "fork": _obj(
        {
            "base": STR,
            "base_run": {"type": ["string", "null"]},
            "channel": STR,
            "step": INT,
            "why": STR,
        }
    ),
    "episode": _obj(
        {
            "env_index": ENV,
            "status": {"enum": ["identical", "diverged", "only_a", "only_b"]},
            "divergence": {"oneOf": [_ref("divergence"), {"type": "null"}]},
            "reward_a": NUM_OR_NULL,
            "reward_b": NUM_OR_NULL,
            "steps_a": INT,
            "steps_b": INT,
            "tool_calls_a": _list(_ref("tool_call")),
            "tool_calls_b": _list(_ref("tool_call")),
            "cause": {"oneOf": [CAUSE, {"type": "null"}]},
            "alignment": _list(_ref("aligned")),
            "fork": {"oneOf": [_ref("fork"), {"type": "null"}]},
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
    "pass_k": _obj(
        {
            "k": {"type": "integer", "minimum": 1},
            "a": NUM_OR_NULL,
            "b": NUM_OR_NULL,
            "delta": NUM_OR_NULL,
        }
    ),
    "stats": _obj(
        {
            "paired": INT,
            "improved": INT,
            "regressed": INT,
            "unchanged": INT,
            "still_failing": INT,
            "binary": BOOL,
            "mean_a": NUM_OR_NULL,
            "mean_b": NUM_OR_NULL,
            "mean_delta": NUM_OR_NULL,
            "ci_low": NUM_OR_NULL,
            "ci_high": NUM_OR_NULL,
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
                        "unit": {"enum": ["reward", "share", "percent"]},
                        "observed": NUM_OR_NULL,
                        "noise": NUM_OR_NULL,
                        "excess": NUM_OR_NULL,
                        "exceeds": {"type": ["boolean", "null"]},
                    }
                )
            ),
        }
    ),
    "counts": _obj(dict.fromkeys(COUNTS, INT)),
    "diff": _obj(
        {
            "format": {"const": "rollout-cassette/diff"},
            "version": {"const": 1},
            "a": _ref("run"),
            "b": _ref("run"),
            "episodes": _list(_ref("episode")),
            "ignored": _list(STR),
            "volatile_seen": _list(STR),
            "stats": {"oneOf": [_ref("stats"), {"type": "null"}]},
            "causes": _list(_ref("cause")),
            "noise": {"oneOf": [_ref("noise"), {"type": "null"}]},
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
            "noise_baseline": {"type": ["string", "null"]},
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
