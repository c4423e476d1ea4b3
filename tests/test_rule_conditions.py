"""Rule oracles probe every condition of every rule, each input part on its own (issue 34).

A web rule reads a category from the task *and* the action (the action counts when the task
names no category) and a user fact. A program that reads one part alone (the task without
the action, the action's value without its element) reproduced every counterfactual that
held the action and varied the task, so it verified and was reused. Here: such programs are
refused on the rule table, the policy model and the derived rules; the shipped programs
still verify; and coverage is computed per condition, naming what no case probes.
"""

from __future__ import annotations

import ast

import pytest

from guardagent.counterfactuals.rule_conditions import rule_coverage
from guardagent.profiles import load_profile
from guardagent.profiles.verification import program_problems

WEB = load_profile("mind2web-sc")
WEB_POLICY = load_profile("mind2web-sc-policy")
ACTION = "seeact_final_action(agent_output)"
TASK = "parse_task(agent_input)"

# One input part dropped or blanked, the rest of the program unchanged.
ONE_PART_ALONE = {
    "the action ignored": (ACTION, "{}"),
    "the action's value ignored": (
        ACTION,
        "{k: v for k, v in seeact_final_action(agent_output).items() if k != 'value'}",
    ),
    "the action's element ignored": (
        ACTION,
        "{k: v for k, v in seeact_final_action(agent_output).items() if k != 'element_text'}",
    ),
    "the task ignored": (TASK, "''"),
    "the task read from the output": (TASK, "parse_task(agent_output)"),
}


def _program(profile_name: str) -> str:
    return load_profile(profile_name).demonstrations[0].code


@pytest.mark.parametrize("profile_name", ["mind2web-sc", "mind2web-sc-policy"])
@pytest.mark.parametrize("what", sorted(ONE_PART_ALONE))
def test_a_program_reading_one_part_of_the_event_alone_is_refused(profile_name, what):
    old, new = ONE_PART_ALONE[what]
    code = _program(profile_name)
    assert old in code
    mutant = code.replace(old, new)
    ast.parse(mutant)
    problems = program_problems(mutant, load_profile(profile_name))
    assert problems, f"{what}: trusted"


@pytest.mark.parametrize("profile_name", ["mind2web-sc", "mind2web-sc-policy"])
def test_the_shipped_programs_still_verify(profile_name):
    assert program_problems(_program(profile_name), load_profile(profile_name)) == []


def _row_mutants() -> list[tuple[str, str]]:
    """The shipped RULES table with one condition of one rule changed (op, value, category)."""
    code = _program("mind2web-sc")
    tree = ast.parse(code)
    table = next(
        n
        for n in tree.body
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "RULES"
    )
    rows = ast.literal_eval(table.value)
    flip = {"==": "!=", ">=": ">", "<": "<="}
    cats = [r["category"] for r in rows]
    out = []
    for i, row in enumerate(rows):
        value = row["value"]
        changes = {
            "op": flip.get(row["op"], "=="),
            "value": (not value) if isinstance(value, bool) else value + 1,
            "category": cats[(i + 1) % len(cats)],
            "field": "vaccine" if row["field"] != "vaccine" else "membership",
        }
        for key, new in changes.items():
            mutated = [dict(r) for r in rows]
            mutated[i][key] = new
            text = code.replace(ast.unparse(table.value), repr(mutated))
            out.append(
                (
                    f"rule {i} {key} -> {new!r}",
                    ast.unparse(
                        ast.parse(
                            ast.unparse(tree).replace(ast.unparse(table.value), repr(mutated))
                        )
                    )
                    if text == code
                    else text,
                )
            )
    return out


@pytest.mark.parametrize(("what", "code"), _row_mutants(), ids=[w for w, _ in _row_mutants()])
def test_a_program_whose_rule_table_changes_one_condition_is_refused(what, code):
    assert code != _program("mind2web-sc")
    assert program_problems(code, WEB), f"{what}: trusted"


@pytest.mark.parametrize("profile", [WEB, WEB_POLICY], ids=["table", "policy model"])
def test_every_condition_of_every_rule_is_probed_by_the_suite(profile):
    found = rule_coverage(profile)
    assert found is not None
    rules = {c.rule for c in found.conditions}
    assert len(rules) == 6
    parts = {c.what.split(" ")[0] for c in found.conditions}
    assert len(found.conditions) >= 6 * 6
    assert found.missing == [], [str(c) for c in found.missing]
    assert parts  # each rule: task, action value, action element, facts at each boundary


def _web_copy(tmp_path, edit_output=None, rows=None, name="web-copy"):
    """A copy of mind2web-sc (its shipped program inline), its outputs or RULES edited."""
    import json

    from guardagent.profiles.loader import BUILTIN_DIR

    src = BUILTIN_DIR / "mind2web-sc"
    code = _program("mind2web-sc")
    if rows is not None:
        tree = ast.parse(code)
        table = next(
            n
            for n in tree.body
            if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "RULES"
        )
        table.value = ast.parse(repr(rows), mode="eval").body
        code = ast.unparse(tree)
    root = tmp_path / name
    root.mkdir()
    demos = [json.loads(line) for line in (src / "demonstrations.jsonl").read_text().splitlines()]
    for demo in demos:
        demo.pop("program", None)
        demo["code"] = code
        if edit_output is not None:
            demo["agent_output"] = edit_output(demo["agent_output"])
    (root / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    text = (src / "profile.yaml").read_text().replace("name: mind2web-sc", f"name: {name}")
    (root / "profile.yaml").write_text(text)
    return load_profile(str(root))


def test_without_a_value_line_the_value_condition_is_unprobed_and_nothing_is_trusted(tmp_path):
    """Coverage is computed from the cases: an edit that cannot be made leaves its condition
    open, and verification names it instead of trusting a program it never probed."""
    profile = _web_copy(
        tmp_path,
        lambda out: out.replace("\n\nVALUE: None", "").replace("\n\nVALUE: Portland, Maine", ""),
    )
    found = rule_coverage(profile)
    assert found is not None and found.missing
    assert {c.what for c in found.missing} >= {
        f"{r['category']!r} read from the action's value alone, under a task that names none"
        for r in profile.policy("RULES")
    }
    problems = program_problems(profile.demonstrations[0].code, profile)
    assert any("not covered" in p and "the action's value alone" in p for p in problems)


def test_profile_check_says_which_rule_conditions_the_suite_probes(tmp_path):
    from guardagent.profiles.check import check_profile, render_check

    shown = render_check(check_profile(WEB))
    assert "rule conditions: 42 of 42 probed alone by counterfactuals over 6 rules" in shown
    gap = render_check(
        check_profile(
            _web_copy(
                tmp_path,
                lambda out: out.replace("\n\nVALUE: None", "").replace(
                    "\n\nVALUE: Portland, Maine", ""
                ),
            )
        )
    )
    assert "rule conditions: 35 of 42 probed" in gap  # 6 parts, 1 "against" probe
    assert "the action's value alone" in gap.split("missing: ", 1)[1]


@pytest.mark.parametrize("field", ["age", "vaccine", "membership", "domestic", "dr_license"])
@pytest.mark.parametrize("category", ["car", "media", "hotel", "job", "purchase", "flight"])
def test_any_single_rule_table_is_covered_and_its_program_verifies(tmp_path, category, field):
    """Table test over one-rule tables: each category x fact, the conditions all probed."""
    value = 21 if field == "age" else True
    op = ">=" if field == "age" else "=="
    rows = [
        {
            "category": category,
            "field": field,
            "op": op,
            "value": value,
            "violation": f"needs {field} for {category}",
        }
    ]
    profile = _web_copy(tmp_path, rows=rows, name=f"web-{category}-{field}")
    found = rule_coverage(profile)
    assert found is not None and len(found.conditions) == 3 + 3
    assert found.missing == [], [str(c) for c in found.missing]
