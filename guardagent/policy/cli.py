r"""`guardagent policy ...`: check a policy model, verify one event against it.

Mounted under the main CLI as the `policy` group::

    guardagent policy check guardagent/policies/tool-calls.yaml
    guardagent policy check my-policy.yaml --json
    guardagent policy verify tool-calls --assign calls_transfer_funds=true \\
        --assign transfer_amount_over_1000=true --assign user_is_verified=false
"""

from __future__ import annotations

import json
import sys

import click

from guardagent.policy.check import check_policy
from guardagent.policy.event import VerificationError
from guardagent.policy.model import PolicyError, load_policy, policy_path
from guardagent.policy.recorder import Assignment, PredicateError, normalize
from guardagent.policy.report import check_json, check_text, verdict_json, verdict_text
from guardagent.policy.verify import verify_event

_VALUES = {"true": True, "false": False, "open": None, "none": None}


@click.group(name="policy")
def policy() -> None:
    """Policy models: predicates, rules and an action tree, verified with z3."""


@policy.command()
@click.argument("policy_file", metavar="POLICY")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--verbose", is_flag=True, help="Also list info findings.")
def check(policy_file: str, as_json: bool, verbose: bool) -> None:
    """Check POLICY (a file, or a shipped policy's name) with z3.

    Exits 1 when it finds errors (unloadable file, undefined predicates, hard rules that
    cannot all hold); warnings (forbidden actions, conflicts, redundant, unused or
    interchangeable predicates) are printed but exit 0.
    """
    report = check_policy(policy_path(policy_file))
    if as_json:
        click.echo(json.dumps(check_json(report), indent=2))
    else:
        click.echo(check_text(report, show_info=verbose))
    sys.exit(0 if report.ok else 1)


def _assignment(text: str) -> tuple[str, Assignment]:
    name, sep, raw = text.partition("=")
    value_text, _, prob_text = raw.partition("@")
    if not sep or value_text.strip().lower() not in _VALUES:
        raise click.BadParameter(f"{text!r}: use NAME=true|false|open[@PROBABILITY]")
    try:
        probability = float(prob_text) if prob_text else None
    except ValueError:
        raise click.BadParameter(f"{text!r}: the probability must be a number") from None
    value = _VALUES[value_text.strip().lower()]
    return name.strip(), Assignment(value=value, probability=probability)


@policy.command()
@click.argument("policy_file", metavar="POLICY")
@click.option("--assign", "assigned", multiple=True, metavar="NAME=VALUE[@P]",
              help="A predicate value: true, false or open, optionally @probability.")
@click.option("--threshold", type=click.FloatRange(0, 1), default=None,
              help="Safety-probability threshold (default: the policy's).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def verify(policy_file: str, assigned: tuple[str, ...], threshold: float | None,
           as_json: bool) -> None:  # fmt: skip
    """Verify one event, given as predicate assignments, against POLICY."""
    try:
        model = load_policy(policy_file)
        values = normalize(dict(_assignment(a) for a in assigned))
        verdict = verify_event(model, values, threshold=threshold)
    except (PolicyError, PredicateError, VerificationError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(verdict_json(verdict) if as_json else verdict_text(verdict))
