"""Policy optimisation (issue 13): redundancy pruning proven by z3, refinements kept only
when they do not weaken the policy, fixed point, statistics and plot."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from guardagent.authoring.cli import policy
from guardagent.authoring.optimize import optimize_policy, plot_stats, write_stats
from guardagent.policy.model import PolicyModel, load_policy_text
from tests.scripted import ScriptedChatModel

HEAD = "format: guardagent-policy/1\nname: t\nversion: '1'\n"


def _policy(predicates: str, rules: str) -> PolicyModel:
    return load_policy_text(f"{HEAD}predicates:\n{predicates}rules:\n{rules}", "t.yaml")


def _preds(*specs: str) -> str:
    out = ""
    for spec in specs:
        name, kind, *desc = spec.split(":")
        out += f"  - name: {name}\n    kind: {kind}\n"
        if desc:
            out += f"    description: {desc[0]}\n"
    return out


def _rules(*logics: str) -> str:
    return "".join(
        f"  - id: r{i}\n    logic: {logic}\n    review: proposed\n"
        for i, logic in enumerate(logics, 1)
    )


def test_pruning_drops_rules_implied_by_rules_that_apply_whenever_they_do() -> None:
    model = _policy(
        _preds("refund:action", "send_email:action", "verified:condition"),
        _rules(
            "refund IMPLIES verified",
            "refund OR send_email IMPLIES verified",
            "send_email IMPLIES verified",
        ),
    )
    result = optimize_policy(model)
    assert [r.logic for r in result.model.rules] == ["refund OR send_email IMPLIES verified"]
    dropped = result.steps[1].details["dropped"]
    assert {d["rule"] for d in dropped} == {"r1", "r3"}
    assert all(d["implied_by"] == ["r2"] for d in dropped)
    assert result.converged


def test_pruning_keeps_a_rule_implied_only_through_another_actions_circuit() -> None:
    # r1 follows from r2 AND r3 logically, but r3 binds only when b is taken: dropping r1
    # would leave an event taking only a without the requirement c.
    model = _policy(
        _preds("a:action", "b:action", "c:condition"),
        _rules("a IMPLIES c", "a IMPLIES b OR c", "b IMPLIES c"),
    )
    kept = {r.id for r in optimize_policy(model).model.rules}
    assert "r1" in kept


def test_merges_synonyms_but_not_distinct_interchangeable_actions() -> None:
    model = _policy(
        _preds(
            "refund:action",
            "export_data:action",
            "ticket_open:condition",
            "open_ticket:condition",
            "approved:condition",
        ),
        _rules(
            "refund IMPLIES ticket_open",
            "export_data IMPLIES open_ticket",
            "NOT approved IMPLIES NOT refund AND NOT export_data",
        ),
    )
    result = optimize_policy(model)
    assert result.steps[1].details["merged"] == ["open_ticket -> ticket_open"]
    names = {p.name for p in result.model.predicates}
    assert "open_ticket" not in names and {"refund", "export_data"} <= names
    assert "export_data IMPLIES ticket_open" in [r.logic for r in result.model.rules]


def _proposal(
    rule: str,
    rules: list[str],
    definitions: dict[str, str] | None = None,
    predicates: list[dict[str, str]] | None = None,
) -> dict[str, object]:
    return {
        "rule": rule,
        "definitions": definitions or {},
        "predicates": predicates or [],
        "rules": [{"logic": logic} for logic in rules],
    }


def _answers(*rounds: list[dict[str, object]]) -> list[str]:
    return [json.dumps({"proposals": r}) for r in rounds]


VAGUE = _policy(
    _preds(
        "process_content:action",
        "publish_content:action",
        "download_content:action",
        "illegal_content:condition",
    ),
    _rules(
        "illegal_content IMPLIES NOT process_content", "illegal_content IMPLIES NOT publish_content"
    ),
)


def test_refinement_split_is_kept_when_z3_confirms_it_is_not_weaker() -> None:
    split = _proposal(
        "r1",
        [
            "illegal_content IMPLIES NOT publish_content",
            "illegal_content IMPLIES NOT download_content",
        ],
        {"process_content": "publish_content OR download_content"},
    )
    chat = ScriptedChatModel.of(_answers([split], []))
    result = optimize_policy(VAGUE, chat, score=False)
    step = result.steps[1]
    assert step.step == "refinement" and step.details["accepted"][0]["rule"] == "r1"
    assert "process_content" not in {p.name for p in result.model.predicates}
    # The refined publish rule duplicates r2: pruning drops one of them.
    assert sorted(r.logic for r in result.model.rules) == [
        "illegal_content IMPLIES NOT download_content",
        "illegal_content IMPLIES NOT publish_content",
    ]
    assert all(r.review == "proposed" for r in result.model.rules)
    assert result.converged


def test_refinement_that_would_weaken_the_policy_is_rejected() -> None:
    # Only publishing is covered: downloading illegal content would become allowed.
    weak = _proposal(
        "r1",
        ["illegal_content IMPLIES NOT publish_content"],
        {"process_content": "publish_content OR download_content"},
    )
    conditional = _proposal(
        "r2",
        ["illegal_content AND adult IMPLIES NOT publish_content"],
        predicates=[{"name": "adult", "kind": "condition"}],
    )
    chat = ScriptedChatModel.of(_answers([weak, conditional], []))
    result = optimize_policy(VAGUE, chat, max_iterations=2, score=False)
    rejected = result.steps[1].details["rejected"]
    assert [r["rule"] for r in rejected] == ["r1", "r2"]
    assert all("weaken" in r["reason"] for r in rejected)
    assert [r.logic for r in result.model.rules] == [r.logic for r in VAGUE.rules]


def test_refinement_contradicting_the_other_rules_is_rejected() -> None:
    model = _policy(
        _preds("refund:action", "verified:condition"), _rules("refund IMPLIES verified", "verified")
    )
    contradiction = _proposal("r1", ["refund IMPLIES verified", "NOT verified"])
    chat = ScriptedChatModel.of(_answers([contradiction], []))
    result = optimize_policy(model, chat, max_iterations=1, score=False)
    [rejected] = result.steps[1].details["rejected"]
    assert "contradict" in rejected["reason"]


def test_malformed_refinement_is_retried_then_reported() -> None:
    bad = json.dumps({"proposals": [_proposal("r9", ["illegal_content IMPLIES"])]})
    chat = ScriptedChatModel.of(["no json at all", bad, bad, '{"proposals": []}'])
    result = optimize_policy(VAGUE, chat, max_iterations=2, attempts=3, score=False)
    errors = result.steps[1].details["errors"]
    assert any("not a rule id" in e for e in errors) and any("logic" in e for e in errors)
    assert "is not a rule id" in str(chat.prompts[2][-1].content)


def test_vagueness_is_scored_and_cached() -> None:
    scores = json.dumps({"scores": {"r1": 0.9, "r2": 0.3}})
    # Pruning drops the unused download_content, so a second iteration asks again.
    chat = ScriptedChatModel.of([scores, '{"proposals": []}', '{"proposals": []}'])
    result = optimize_policy(VAGUE, chat)
    assert [s.vagueness for s in result.steps] == [0.6] * 5
    assert len(chat.prompts) == 3  # unchanged rules are not scored twice


def test_statistics_json_and_plot(tmp_path: Path) -> None:
    model = _policy(
        _preds("refund:action", "verified:condition"),
        _rules("refund IMPLIES verified", "refund IMPLIES verified"),
    )
    result = optimize_policy(model, max_iterations=10)
    write_stats(result, tmp_path / "s.json")
    plot_stats(result, tmp_path / "s.png")
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["before"]["rules"] == 2 and stats["after"]["rules"] == 1
    assert [s["step"] for s in stats["steps"]] == ["extracted", "pruning", "pruning"]
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"


def test_optimize_command_offline_prunes_and_says_refinement_needs_a_model(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        f"{HEAD}predicates:\n{_preds('refund:action', 'verified:condition')}"
        f"rules:\n{_rules('refund IMPLIES verified', 'refund IMPLIES verified')}"
    )
    result = CliRunner().invoke(policy, ["optimize", str(path), "--no-plot"])
    assert result.exit_code == 0, result.output
    assert "refinement and vagueness scores need a model" in result.output
    assert "--model openai:gpt-4o" in result.output
    assert len(load_policy_text((tmp_path / "p.optimized.yaml").read_text()).rules) == 1
    assert json.loads((tmp_path / "p.optimized.stats.json").read_text())["converged"]
