"""The eval report draws each wrong decision's rule circuit as Mermaid (issue 37 item 6).

A reviewer of an eval run reads the wrong decisions first; under a policy model each one
gets the picture of the rules that decided it (rendered by GitHub, GitLab and MkDocs
Material). Decisions without rules (a generated program decided) get no picture.
"""

from __future__ import annotations

from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case
from guardagent.eval.report import wrong_decisions
from guardagent.policy.results import RuleResult

_RULE = RuleResult(
    id="no-wire",
    status="violated",
    logic="pays IMPLIES known",
    policy="Pay known payees",
    deciding={"pays": True, "known": False},
)


def _blocks(lines: list[str]) -> list[list[str]]:
    text = "\n".join(lines)
    return [part.split("```", 1)[0].splitlines() for part in text.split("```mermaid\n")[1:]]


def test_a_wrong_denial_under_a_policy_model_gets_its_circuit() -> None:
    from tests.test_explain import _mermaid_ok

    case = Case(id="c1", agent_input="pay `x` [1]", agent_output="```\nsend\n```", label=0)
    decision = GuardDecision(allowed=False, label=1, reason="denied by no-wire", rules=[_RULE])
    (block,) = _blocks(wrong_decisions([case], [decision]))
    assert block[0] == "flowchart LR"
    assert _mermaid_ok("\n".join(block))
    assert any("no-wire" in line for line in block) and any("==>" in line for line in block)


def test_a_wrong_decision_without_rules_gets_no_picture() -> None:
    case = Case(id="c2", agent_input="a", agent_output="b", label=1, violations=["x"])
    decision = GuardDecision(allowed=True, label=0)
    assert _blocks(wrong_decisions([case], [decision])) == []


def test_right_decisions_are_not_drawn() -> None:
    case = Case(id="c3", agent_input="a", agent_output="b", label=1)
    decision = GuardDecision(allowed=False, label=1, rules=[_RULE])
    assert _blocks(wrong_decisions([case], [decision])) == []
