"""The policy file format: loading with positioned errors, the action tree, canonical dumps."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardagent.policy.model import (
    FORMAT,
    PolicyError,
    dump_policy,
    load_policy,
    load_policy_text,
    shipped_policies,
)

HERE = Path(__file__).parent / "policies"


def policy(predicates: str, rules: str = "", extra: str = "") -> str:
    return (
        f"format: {FORMAT}\nname: t\nversion: '2'\n{extra}predicates:\n{predicates}rules:\n{rules}"
    )


def issues(text: str, strict: bool = True) -> list[str]:
    with pytest.raises(PolicyError) as info:
        load_policy_text(text, "t.yaml", strict=strict)
    return [str(i) for i in info.value.issues]


def test_shipped_and_test_policies_round_trip_through_the_canonical_dump():
    paths = [*(HERE.glob("reddit_profile.yaml")), *(Path(p) for p in shipped_policies())]
    assert {"eicu-ac", "mind2web-sc", "tool-calls"} <= set(shipped_policies())
    for path in paths:
        model = load_policy(path)
        again = load_policy_text(dump_policy(model), "dumped.yaml")
        assert again == model
        assert dump_policy(again) == dump_policy(model)  # stable: a re-dump is no diff


def test_a_loaded_model_has_its_parts():
    model = load_policy(HERE / "reddit_profile.yaml")
    assert model.version == "1" and model.threshold == 0.5
    rule = model.by_id["private-needs-consent"]
    assert rule.template == "P1 AND NOT P2 IMPLIES NOT P3"
    assert rule.risk_types == ("content restriction", "operational restriction")
    assert rule.hard and rule.weight == 1.0
    assert model.by_id["follow-the-request"].weight == 2.0
    assert model.by_name["user_consent"].probability == 0.9
    assert model.by_name["user_consent"].assigned_by.kind == "query"
    assert model.tree.ancestors("update_bio") == ("profile_modification", "content_access")
    assert set(model.tree.descendants("content_access")) == {
        "profile_modification",
        "update_bio",
        "update_account_info",
        "publish_data",
    }
    assert model.tree.depth == 3
    # A rule's circuit: the actions its logic names, plus those it is attached to.
    assert model.circuits["publish_data"] == (
        "private-needs-consent",
        "truthful-only",
        "no-harmful-content",
        "personal-is-private",
    )
    assert model.circuits["content_access"] == ("follow-the-request",)
    assert model.by_id["private-needs-consent"].location.line == 66
    assert model.by_id["private-needs-consent"].logic_location.line == 67


def test_every_problem_is_reported_with_its_position():
    text = policy(
        "  - {name: a, kind: action, parent: b}\n"
        "  - {name: b, kind: action, parent: a}\n"
        "  - {name: c, kind: condition, parent: a, colour: red}\n"
        "  - {name: c, kind: thing}\n"
        "  - {name: d, kind: action, target: nodot}\n"
        "  - {name: e, kind: condition, probability: 1.5}\n"
        "  - {name: 9lives, kind: condition}\n",
        "  - {id: r1, logic: a IMPLIES c}\n"
        "  - {id: r1, logic: a IMPLIES d, actions: [c, ghost]}\n"
        "  - {id: r2, logic: a IMPLIES c, template: P1 AND P2}\n"
        "  - {id: r3, logic: ghost OR c}\n",
    )
    found = issues(text)
    joined = "\n".join(found)
    assert "t.yaml:5:5: action tree has a cycle: a -> b -> a" in joined
    assert "unknown key 'colour'" in joined
    assert "parent is for action predicates only" in joined
    assert "kind must be 'action' or 'condition'" in joined
    assert "duplicate predicate 'c'" in joined
    assert "target must look like group.item" in joined
    assert "probability must be a number in [0.0, 1.0]" in joined
    assert "use letters, digits and _" in joined
    assert "duplicate rule id 'r1'" in joined
    assert "actions names 'c', which is not a declared action predicate" in joined
    assert "actions names 'ghost'" in joined
    assert "template 'P1 AND P2' does not match the logic" in joined
    assert "t.yaml:16:21: rule 'r3' uses undefined predicate 'ghost'" in joined
    assert all(line.startswith("t.yaml:") for line in found)


def test_non_strict_loading_keeps_undefined_names_for_the_checker():
    text = policy("  - {name: a, kind: action}\n", "  - {id: r, logic: a IMPLIES ghost}\n")
    assert any("undefined predicate 'ghost'" in i for i in issues(text))
    model = load_policy_text(text, strict=False)
    assert list(model.undefined) == ["ghost"]


def test_format_version_and_required_keys():
    assert any(
        "unknown format 'guardagent-policy/9'" in i
        for i in issues(
            "format: guardagent-policy/9\nname: t\nversion: '1'\npredicates: []\nrules: []\n"
        )
    )
    missing = issues("format: guardagent-policy/1\npredicates: []\n")
    assert any("missing required key 'name'" in i for i in missing)
    assert any("missing required key 'version'" in i for i in missing)
    assert any("not valid YAML" in i for i in issues("format: [unclosed\n"))
    assert any("empty" in i for i in issues(""))


def test_assign_needs_exactly_one_way():
    text = policy("  - {name: a, kind: condition, assign: {tool: x, query: 'y?'}}\n")
    assert any("exactly one of tool, expression, query" in i for i in issues(text))


def test_missing_file_is_a_policy_error(tmp_path):
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(tmp_path / "nope.yaml")
