"""Aligned tool-call sequences (cassette.diff.align) and grouped causes
(cassette.diff.causes), by hand and on recorded runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cassette.diff import Divergence, ToolCall, diff_runs
from cassette.diff.align import MAX_CELLS, align_calls
from cassette.diff.causes import classify, sentence
from tests.helpers.runs import TOOLS, record


def _calls(spec: str) -> list[ToolCall]:
    """``"a b:2 c"``: tool a, tool b with argument 2, tool c."""
    out = []
    for i, word in enumerate(spec.split()):
        name, _, arg = word.partition(":")
        out.append(ToolCall("llm", i, name, {"x": arg or "0"}))
    return out


def _ops(a: str, b: str) -> list[tuple[str, int | None, int | None]]:
    return [(r.op, r.a, r.b) for r in align_calls(_calls(a), _calls(b))]


def test_alignment_by_hand() -> None:
    assert _ops("a b c", "a b c") == [("same", 0, 0), ("same", 1, 1), ("same", 2, 2)]
    assert _ops("a b c", "a c") == [("same", 0, 0), ("deleted", 1, None), ("same", 2, 1)]
    assert _ops("a c", "a b c") == [("same", 0, 0), ("inserted", None, 1), ("same", 1, 2)]
    assert _ops("a b c", "a b:1 c") == [("same", 0, 0), ("changed", 1, 1), ("same", 2, 2)]
    # another tool at the same place is one change, not a deletion and an insertion
    assert _ops("a b c", "a x c") == [("same", 0, 0), ("changed", 1, 1), ("same", 2, 2)]
    # past the first divergence: B skips a call, then makes two more at the end
    ops = _ops("s a b c d", "s a c d e f")
    assert ops == [
        ("same", 0, 0),
        ("same", 1, 1),
        ("deleted", 2, None),
        ("same", 3, 2),
        ("same", 4, 3),
        ("inserted", None, 4),
        ("inserted", None, 5),
    ]
    rows = align_calls(_calls("s a b c d"), _calls("s a c d e f"))
    assert sum(row.op != "same" for row in rows) == 3
    # a changed call keeps its tool: b:1 pairs with b:2, not with the c that follows
    assert _ops("a b:1 c", "a b:2") == [("same", 0, 0), ("changed", 1, 1), ("deleted", 2, None)]
    assert _ops("", "a b") == [("inserted", None, 0), ("inserted", None, 1)]
    assert _ops("a", "") == [("deleted", 0, None)]


def test_a_middle_too_large_for_the_table_is_paired_by_position() -> None:
    n = int(MAX_CELLS**0.5) + 10
    a = [ToolCall("llm", i, "t", {"i": i}) for i in range(n)]
    b = [ToolCall("llm", i, "t", {"i": -i - 1}) for i in range(n + 2)]
    ops = [r.op for r in align_calls(a, b)]
    assert ops == ["changed"] * n + ["inserted"] * 2


def _div(path: str, part: str = "request") -> Divergence:
    return Divergence("llm", 0, part, path)  # type: ignore[arg-type]


def test_classify_paths() -> None:
    req = {
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": None},
            {"role": "tool", "content": "r"},
            {"role": "user", "content": [{"type": "tool_result", "content": "r"}]},
        ],
        "input": [{"type": "function_call_output", "output": "r"}, {"type": "function_call"}],
    }
    got = {
        path: classify(_div(path), req, req)
        for path in (
            "request.messages[0].content",
            "request.messages[1].content",
            "request.messages[2].tool_calls[0].function.arguments",
            "request.messages[3].content",
            "request.messages[4].content[0].content",
            "request.input[0].output",
            "request.input[1].arguments",
            "request.tools[0].function.parameters.properties.city",
            "request.tool_choice",
            "request.system",
            "request.instructions",
            "request.temperature",
            "request.max_tokens",
            "request.model",
            "request.metadata.user",
        )
    }
    assert list(got.values()) == [
        "system_prompt",
        "user_message",
        "model_output",
        "tool_result",
        "tool_result",
        "tool_result",
        "model_output",
        "tool_schema",
        "tool_schema",
        "system_prompt",
        "system_prompt",
        "sampling",
        "sampling",
        "model",
        "request_other",
    ]
    # a message only one side has: its role is read from that side
    longer = {"messages": [*req["messages"], {"role": "tool"}]}
    assert classify(_div("request.messages[5]"), req, longer) == "tool_result"
    assert classify(_div("response.choices[0].message.content", "response")) == "model_output"
    mcp_call = {"method": "tools/call", "params": {"name": "lookup", "arguments": {}}}
    assert classify(_div("response.content[0].text", "response"), mcp_call) == "tool_result"
    assert (
        classify(_div("response.tools[0]", "response"), {"method": "tools/list"}) == "tool_schema"
    )
    assert classify(Divergence("llm", 3, "step", "", b_missing=True)) == "steps"
    assert classify(Divergence(None, None, "outcome", "outcome.reward")) == "outcome"
    assert sentence("tool_schema", 40) == "40 episodes diverged because the tool schema changed"
    assert sentence("tool_result", 1) == "1 episode diverged because a tool result changed"


def test_causes_grouped_on_recorded_runs(tmp_path: Path) -> None:
    calls = [("lookup", {"city": "Oslo"}), ("lookup", {"city": "Rome"})]
    plan = {i: (calls, 1.0) for i in range(12)}
    a = record(tmp_path / "a.jsonl", plan)
    new_tools = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "description": "Find it."}}]
    b_plan = dict(plan)
    for i in (9, 10):  # the model's own choice differs at the second call
        b_plan[i] = ([calls[0], ("lookup", {"city": "Lima"})], 0.0)
    b = record(
        tmp_path / "b.jsonl",
        b_plan,
        tools=lambda env: new_tools if env < 5 else TOOLS,  # 5 episodes: schema changed
        system=lambda env: "Be terse." if env in (5, 6) else "Be brief.",  # 2: system prompt
        result=lambda env, call: "timeout" if env == 7 else f"{call[0]} {call[1]}: ok",
    )
    d = diff_runs(a, b)
    assert [(g.cause, g.count) for g in d.causes] == [
        ("tool_schema", 5),
        ("system_prompt", 2),
        ("model_output", 2),
        ("tool_result", 1),
    ]
    assert d.causes[0].text == "5 episodes diverged because the tool schema changed"
    assert d.causes[0].episodes == [0, 1, 2, 3, 4]
    assert d.causes[0].paths == {"request.tools[*].function.description": 5}
    assert d.causes[3].paths == {"request.messages[*].content": 1}
    assert d.episode(7).cause == "tool_result" and d.episode(11).cause is None
    # the aligned calls of a changed episode: the second call changed
    assert [r.op for r in d.episode(9).alignment] == ["same", "changed"]
    assert d.stats is not None and (d.stats.regressed, d.stats.unchanged) == (2, 10)
    t = record(tmp_path / "t.jsonl", plan, temperature=0.7)
    assert [(g.cause, g.count) for g in diff_runs(a, t).causes] == [("sampling", 12)]


@pytest.mark.parametrize("n", [3, 30])
def test_alignment_is_kept_for_diverged_episodes_only(tmp_path: Path, n: int) -> None:
    calls = [("lookup", {"city": str(i)}) for i in range(n)]
    a = record(tmp_path / "a.jsonl", {0: (calls, 1.0), 1: (calls, 1.0)})
    b = record(tmp_path / "b.jsonl", {0: (calls, 1.0), 1: (calls[:1] + calls[2:], 1.0)})
    d = diff_runs(a, b)
    assert d.episode(0).alignment == [] and d.episode(0).cause is None
    ops = [r.op for r in d.episode(1).alignment]
    assert ops == ["same", "deleted"] + ["same"] * (n - 2)


def _reference_cost(a: list[ToolCall], b: list[ToolCall]) -> int:
    """The least alignment cost, by the textbook recursion (small inputs only)."""
    from functools import cache

    def sub(x: ToolCall, y: ToolCall) -> int:
        if (x.name, x.arguments) == (y.name, y.arguments):
            return 0
        return 2 if x.name == y.name else 3

    @cache
    def d(i: int, j: int) -> int:
        if i == 0 or j == 0:
            return 2 * (i + j)
        return min(d(i - 1, j - 1) + sub(a[i - 1], b[j - 1]), d(i - 1, j) + 2, d(i, j - 1) + 2)

    return d(len(a), len(b))


@given(
    st.lists(st.sampled_from(["a", "b", "c", "a:1", "b:1"]), max_size=9),
    st.lists(st.sampled_from(["a", "b", "c", "a:1", "b:1"]), max_size=9),
)
def test_alignment_is_complete_ordered_and_of_least_cost(sa: list[str], sb: list[str]) -> None:
    a, b = _calls(" ".join(sa)), _calls(" ".join(sb))
    rows = align_calls(a, b)
    assert [r.a for r in rows if r.a is not None] == list(range(len(a)))
    assert [r.b for r in rows if r.b is not None] == list(range(len(b)))
    cost = 0
    for r in rows:
        if r.op in ("deleted", "inserted"):
            assert (r.a is None) == (r.op == "inserted") and (r.b is None) == (r.op == "deleted")
            cost += 2
        else:
            assert r.a is not None and r.b is not None
            x, y = a[r.a], b[r.b]
            same = (x.name, x.arguments) == (y.name, y.arguments)
            assert (r.op == "same") == same
            cost += 0 if same else 2 if x.name == y.name else 3
    assert cost == _reference_cost(a, b)
