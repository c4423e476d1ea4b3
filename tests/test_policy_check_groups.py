"""Interchangeable predicates are reported one line per group, not one per pair (issue 20, item 10).

A policy that lists 15 call patterns in one rule ("any of these needs consent") made
`policy check` print 105 warnings, one per pair; a group is now one finding naming every
member, and trace predicates the host computes from different expressions are not merge
candidates at all (they are different facts even when every rule treats them alike).
"""

from __future__ import annotations

from guardagent.policy.check import check_model
from guardagent.policy.model import load_policy_text

TOOLS = [f"tool_{n:02d}" for n in range(15)]


def policy(assign: bool) -> str:
    lines = ["format: guardagent-policy/1", "name: fifteen", 'version: "1"', "predicates:"]
    for tool in TOOLS:
        lines += [f"  - name: calls_{tool}", "    kind: action"]
        if assign:
            lines.append(f"    assign: {{trace: 'tool_is(\"{tool}\")'}}")
    lines += [
        "  - name: approved",
        "    kind: condition",
        "  - name: reviewed",
        "    kind: condition",
        "rules:",
        "  - id: patterns-need-consent",
        "    logic: (" + " OR ".join(f"calls_{t}" for t in TOOLS) + ") IMPLIES approved",
        "  - id: approved-means-reviewed",
        "    logic: approved IMPLIES reviewed",
    ]
    return "\n".join(lines) + "\n"


def interchangeable(text: str) -> list[tuple[str, ...]]:
    report = check_model(load_policy_text(text, strict=False))
    return [f.predicates for f in report.findings if f.code == "interchangeable_predicates"]


def test_fifteen_interchangeable_actions_are_one_warning_naming_all() -> None:
    found = interchangeable(policy(assign=False))
    assert found == [tuple(f"calls_{t}" for t in TOOLS)]  # was 105 findings, one per pair


def test_trace_patterns_with_different_expressions_are_not_merge_candidates() -> None:
    assert interchangeable(policy(assign=True)) == []


def test_same_trace_expression_twice_is_still_found() -> None:
    text = policy(assign=True).replace('tool_is("tool_01")', 'tool_is("tool_00")')
    assert interchangeable(text) == [("calls_tool_00", "calls_tool_01")]


def test_groups_are_split_where_a_swap_changes_a_rule() -> None:
    text = (
        "\n".join(
            [
                "format: guardagent-policy/1",
                "name: split",
                'version: "1"',
                "predicates:",
                *[f"  - {{name: {n}, kind: condition}}" for n in ("a", "b", "c", "d", "e")],
                "  - {name: act, kind: action}",
                "rules:",
                "  - {id: r1, logic: act IMPLIES ((a OR b) AND (c OR d) AND e)}",
            ]
        )
        + "\n"
    )
    assert sorted(interchangeable(text)) == [("a", "b"), ("c", "d")]
