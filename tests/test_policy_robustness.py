"""Nothing raises into the host: hostile policy files and assignments end in a PolicyError
with a position, or in a denial (issue 19, class 8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.policy.model import PolicyError, load_policy_text
from guardagent.policy.verify import verify_event

EXAMPLE = Path(__file__).parent.parent / "guardagent/policies/examples/assistant/policy.yaml"
BASE = EXAMPLE.read_text(encoding="utf-8")


def _error(text: str) -> str:
    with pytest.raises(PolicyError) as caught:
        load_policy_text(text, "p.yaml")
    return str(caught.value)


@pytest.mark.parametrize(
    "tagged",
    [
        BASE.replace("phone_region: CH", "phone_region: !!python/name:os.system CH"),
        BASE.replace('version: "1"', 'version: !!python/object/apply:os.system ["true"]'),
        BASE.replace("threshold: 0.5", "threshold: !custom 0.5"),
    ],
)
def test_a_python_or_custom_tag_is_a_policy_error_with_its_position(tagged: str) -> None:
    line = next(i for i, text in enumerate(tagged.splitlines(), 1) if "!" in text.split("#")[0])
    message = _error(tagged)
    assert f"p.yaml:{line}:" in message and "not allowed" in message


def test_yaml_nested_thousands_deep_is_a_policy_error() -> None:
    message = _error(BASE + "\nextra: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "p.yaml:" in message and "nested more than" in message


@pytest.mark.parametrize(
    "logic",
    [
        "NOT " * 5000 + "sends_money",
        "(sends_money AND " * 5000 + "browses" + ")" * 5000,
        "sends_money IMPLIES " * 5000 + "browses",
    ],
)
def test_a_formula_nested_5000_deep_is_a_policy_error(logic: str) -> None:
    first = next(line for line in BASE.splitlines() if line.strip().startswith("logic:"))
    text = BASE.replace(first, first.split("logic:")[0] + f"logic: {logic}", 1)
    message = _error(text)
    assert "p.yaml:" in message and "more than 100 deep" in message


def _many_opens(n: int) -> str:
    conditions = [f"c{i}" for i in range(n)]
    preds = "\n".join(f"  - {{name: {c}, kind: condition, description: d}}" for c in conditions)
    return f"""
format: guardagent-policy/1
name: many
version: "1"
predicates:
  - {{name: act, kind: action, description: d}}
{preds}
rules:
  - id: r
    logic: act IMPLIES ({" OR ".join(conditions)})
    remediation: Settle one.
"""


@pytest.mark.parametrize("n", [9, 24])
def test_a_rule_with_many_open_conditions_denies_with_a_remedy(n: int) -> None:
    verdict = verify_event(load_policy_text(_many_opens(n)), {"act": True})
    assert not verdict.allowed
    assert verdict.remediation is not None and verdict.remediation.feasible
    assert all(r.changes for r in verdict.remediation.remedies)


def test_an_expected_action_missing_from_the_assignments_is_open_and_denies() -> None:
    model = load_policy_text(BASE)
    given = {
        "recipient_trusted": False,
        "site_trusted": False,
        "leaks_secret": False,
        "call_confirmed": False,
    }
    for verdict in (verify_event(model, given), verify_event(model, given, expected=["browses"])):
        assert not verdict.allowed
        assert "browses" in verdict.open_predicates
    assert verify_event(model, given, expected=()).allowed  # an unreported action: not taken
    program = load_policy_text(_many_opens(2))  # no trace predicates: a program's policy
    assert verify_event(program, {"act": False, "c0": False, "c1": False}).allowed
    # `act` declares no reader and the program reported no action: nobody said it is not
    # taken, so it is open and its rule denies.
    assert not verify_event(program, {"c0": False, "c1": False}).allowed


_YAML_PIECES = [
    "a: ",
    "- ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "\n",
    "  ",
    "!!str ",
    "!!python/object ",
    "!x ",
    "&a ",
    "*a",
    "'q'",
    '"q"',
    "? ",
    ": ",
    "|\n  t\n",
    "# c\n",
    "1",
    "x",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_YAML_PIECES), max_size=40))
def test_the_screen_reads_yaml_as_the_pure_python_parser_does(pieces: list[str]) -> None:
    """The screen reads a policy file with the parser that composes it (LibYAML's); on any
    text it finds what PyYAML's own parser would: the same first problem, at the same place."""
    import yaml

    text = "".join(pieces)
    assert _read(text, yaml.CSafeLoader) == _read(text, yaml.SafeLoader), text


def _read(text: str, loader: type) -> object:
    """What the screen finds with this parser, or that the parser refused the text."""
    import yaml

    from guardagent.policy.screen import _screen

    try:
        return _screen(text, loader)
    except yaml.YAMLError:
        return "refused"


@pytest.mark.parametrize(
    "text",
    [
        BASE,
        BASE + "\nextra: " + "[" * 70 + "]" * 70 + "\n",
        "a: !!python/name:os.system x\n",
        "a: !custom [1, 2]\n",
        "a: &x [1, *x]\n",
        "- !!str a\n- !!map {b: !!int 1}\n",
        "a: [\n",
        *(p.read_text(encoding="utf-8") for p in sorted((EXAMPLE.parent.parent).rglob("*.yaml"))),
    ],
)
def test_the_screen_agrees_with_the_pure_python_parser_on_policy_files(text: str) -> None:
    import yaml

    assert _read(text, yaml.CSafeLoader) == _read(text, yaml.SafeLoader)
