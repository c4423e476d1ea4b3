r"""`guardagent policy ...`: check a policy model, verify one event against it.

Mounted under the main CLI as the `policy` group::

    guardagent policy check guardagent/policies/tool-calls.yaml
    guardagent policy check my-policy.yaml --json
    guardagent policy verify tool-calls --assign calls_transfer_funds=true \\
        --assign transfer_amount_over_1000=true --assign user_is_verified=false
    guardagent policy extract handbook.md --model openai:gpt-4o --out policy.yaml
    guardagent policy optimize policy.yaml --model openai:gpt-4o --out policy.yaml
    guardagent policy review policy.yaml --approve RULE --reject RULE
    guardagent policy diff old.yaml new.yaml
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from guardagent.exit_status import DENIED, OK, UNREADABLE, InputError, epilog
from guardagent.policy.check import check_model, check_policy
from guardagent.policy.event import VerificationError
from guardagent.policy.model import (
    PolicyError,
    PolicyModel,
    guarding_model,
    load_policy,
    load_policy_text,
    policy_path,
)
from guardagent.policy.recorder import Assignment, PredicateError, normalize
from guardagent.policy.report import check_json, check_text, verdict_json, verdict_text
from guardagent.policy.verify import verify_event

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from guardagent.authoring.review import ReviewDecision
    from guardagent.authoring.signoff import ReviewSignoff

_VALUES = {"true": True, "false": False, "open": None, "none": None}


@click.group(name="policy", epilog=epilog())
def policy() -> None:
    """Policy models: predicates, rules and an action tree, verified with z3."""


@policy.command(
    epilog=epilog(
        "policy check: 1 when it finds errors (or, with --profile, the profile's counterfactuals",
        "would not cover it), 2 when POLICY or the profile does not load.",
    )
)
@click.argument("policy_file", metavar="POLICY")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--verbose", is_flag=True, help="Also list info findings.")
@click.option(
    "--profile",
    "profile_ref",
    metavar="PROFILE",
    help="Also print which cells and rule conditions the counterfactuals built "
    "from PROFILE's demonstrations would probe with POLICY as its oracle.",
)
def check(policy_file: str, as_json: bool, verbose: bool, profile_ref: str | None) -> None:
    """Check POLICY (a file, or a shipped policy's name) with z3.

    Exits 1 when it finds errors (undefined predicates, hard rules that cannot all hold),
    2 when the file does not load (missing, not YAML, not a policy); warnings (forbidden
    actions, conflicts, redundant, unused or interchangeable predicates) are printed but
    exit 0. With `--profile`, it also prints POLICY's coverage as that profile's oracle
    (each identity x column cell, each rule condition probed) and exits 1 when some cell,
    condition or rule would go unprobed: verification would then trust no program.
    """
    report = check_policy(policy_path(policy_file))
    if not any(f.code == "load_error" for f in report.findings):
        try:  # rejected rules never guard: judge the policy without them
            model = load_policy(policy_file, strict=False)
        except PolicyError:
            model = None
        if model is not None and any(r.review == "rejected" for r in model.rules):
            kept = tuple(r for r in model.rules if r.review != "rejected")
            report = check_model(dataclasses.replace(model, rules=kept))
    unloadable = any(f.code == "load_error" for f in report.findings)
    lines = [] if profile_ref is None or unloadable else _coverage(policy_file, profile_ref)
    covered = not any(line.startswith("not covered") for line in lines)
    if as_json:
        click.echo(
            json.dumps(
                {**check_json(report), **({"coverage": lines} if profile_ref else {})}, indent=2
            )
        )
    else:
        click.echo(check_text(report, show_info=verbose))
        if lines:
            click.echo("\n".join(lines))
    sys.exit(OK if report.ok and covered else UNREADABLE if unloadable else DENIED)


def _coverage(policy_file: str, profile_ref: str) -> list[str]:
    """POLICY's coverage as the profile's oracle (:mod:`guardagent.counterfactuals.coverage`)."""
    from guardagent.counterfactuals.coverage import coverage_lines
    from guardagent.profiles import load_profile

    try:
        profile = load_profile(profile_ref)
        model = guarding_model(load_policy(policy_file))
    except (OSError, ValueError, KeyError, PolicyError) as exc:
        click.echo(f"cannot read {profile_ref!r} or the policy: {exc}", err=True)
        sys.exit(UNREADABLE)
    return coverage_lines(model, profile)


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


@policy.command(
    epilog=epilog(
        "policy verify: 0 allowed, 1 denied (open predicates too), 2 when POLICY does",
        "not load or an assignment names a predicate it does not declare.",
    )
)
@click.argument("policy_file", metavar="POLICY")
@click.option(
    "--assign",
    "assigned",
    multiple=True,
    metavar="NAME=VALUE[@P]",
    help="A predicate value: true, false or open, optionally @probability.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=None,
    help="Safety-probability threshold (default: the policy's).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
def verify(
    policy_file: str, assigned: tuple[str, ...], threshold: float | None, as_json: bool
) -> None:
    """Verify one event, given as predicate assignments, against POLICY.

    Exits as `guardagent check` does: 0 allowed, 1 denied, 2 input it could not read.
    """
    try:
        model = guarding_model(load_policy(policy_file))
        values = normalize(dict(_assignment(a) for a in assigned))
        verdict = verify_event(model, values, threshold=threshold)
    except (PolicyError, PredicateError, VerificationError) as exc:
        raise InputError(str(exc)) from None
    click.echo(verdict_json(verdict) if as_json else verdict_text(verdict))
    sys.exit(OK if verdict.allowed else DENIED)  # a script must not read a deny as success


# --------------------------------------------------------------------------- documents -> policy

NEEDS_MODEL = """{command} needs a chat model{why}, and none is configured.
Configure one with --model (a LangChain init_chat_model spec):
  --model openai:gpt-4o                      (API key in OPENAI_API_KEY)
  --model anthropic:claude-sonnet-4-5        (API key in ANTHROPIC_API_KEY)
  --model openai:MODEL --base-url http://127.0.0.1:8000/v1
                                             (a local OpenAI-compatible server, e.g. vLLM)
  --model replay:ANSWERS.json                (recorded answers, for demos and tests)
`guardagent policy check` and guarding with an existing policy work without a model."""

_model_option = click.option(
    "--model",
    "model_spec",
    default=None,
    metavar="SPEC",
    help="Chat model: openai:gpt-4o, ollama:qwen2.5, replay:answers.json, ...",
)
_base_url_option = click.option(
    "--base-url",
    default=None,
    metavar="URL",
    help="OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1.",
)


def _chat_model(spec: str | None, base_url: str | None) -> BaseChatModel | None:
    """The chat model a `--model` spec names, or None when there is none (offline)."""
    from guardagent.llm import ModelConfigError, is_offline, resolve_model

    if spec is None or is_offline(spec):
        return None
    if spec.startswith("replay:"):
        from guardagent.authoring.replay import ReplayChatModel

        try:
            return ReplayChatModel.from_file(spec.removeprefix("replay:"))
        except ValueError as exc:
            raise InputError(str(exc)) from None
    try:
        return resolve_model(spec, base_url)
    except ModelConfigError as exc:
        raise InputError(str(exc)) from None


def _require_model(model: BaseChatModel | None, command: str, why: str) -> BaseChatModel:
    if model is None:
        click.echo(NEEDS_MODEL.format(command=command, why=why), err=True)
        sys.exit(UNREADABLE)
    return model


def _findings(report: Any) -> list[str]:
    return [
        f"  {f.severity}: {f.code}: {f.message}" for f in report.findings if f.severity != "info"
    ]


@policy.command(
    epilog=epilog(
        "policy extract: 1 when a section's answer was never valid, the model call",
        "failed or `policy check` finds errors; 2 without a model or a readable DOC.",
    )
)
@click.argument(
    "documents",
    nargs=-1,
    required=True,
    metavar="DOC...",
    type=click.Path(exists=True, dir_okay=False),
)
@_model_option
@_base_url_option
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False),
    help="Where to write the policy model (YAML).",
)
@click.option("--name", default=None, help="Policy name (default: the first document's stem).")
@click.option(
    "--attempts",
    type=click.IntRange(1, 10),
    default=3,
    show_default=True,
    help="Model calls per section: the first answer and its corrections.",
)
@click.option("--progress/--no-progress", default=True, help="A progress bar per section.")
def extract(
    documents: tuple[str, ...],
    model_spec: str | None,
    base_url: str | None,
    out: str,
    name: str | None,
    attempts: int,
    progress: bool,
) -> None:
    """Extract a policy model from DOC... (Markdown, text, HTML, PDF) with a model.

    Every rule keeps its source reference and verbatim span and starts as `review:
    proposed`; the policy is `approved_only`, so nothing guards until reviewed. A report
    (sections, attempts, failures, z3 findings) is written to OUT.report.json. Exits 1 when
    a section's answer was never valid or `policy check` finds errors (the policy is still
    written, for a person to fix), 2 without a model.
    """
    from guardagent.authoring.documents import DocumentError
    from guardagent.authoring.extract import extract_policy
    from guardagent.llm import ModelCallError

    chat = _require_model(
        _chat_model(model_spec, base_url), "policy extract", " to read the documents"
    )
    try:
        result = extract_policy(
            list(documents), chat, name=name, attempts=attempts, progress=progress
        )
    except DocumentError as exc:
        raise InputError(str(exc)) from None
    except ModelCallError as exc:  # the model failed, not the input: the command did not pass
        raise click.ClickException(str(exc)) from None
    target = Path(out)
    target.write_text(result.text, encoding="utf-8")
    report_path = target.with_name(target.name + ".report.json")
    report_path.write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    model = result.model
    click.echo(
        f"wrote {target}: {0 if model is None else len(model.predicates)} predicates, "
        f"{0 if model is None else len(model.rules)} rules from "
        f"{len(result.sections)} sections (report: {report_path})"
    )
    for section in result.failed:
        click.echo(f"section {section.ref} failed after {section.attempts} attempt(s):", err=True)
        for error in section.errors:
            click.echo(f"  {error}", err=True)
    if result.check is not None and not result.check.ok:
        click.echo("policy check found errors in the extracted policy:", err=True)
        for line in _findings(result.check):
            click.echo(line, err=True)
    elif result.check is not None and result.check.findings:
        click.echo("policy check:")
        for line in _findings(result.check):
            click.echo(line)
    sys.exit(OK if result.ok else DENIED)


@policy.command(epilog=epilog("policy optimize: 1 when a model call failed."))
@click.argument("policy_file", metavar="POLICY")
@_model_option
@_base_url_option
@click.option("--max-iterations", type=click.IntRange(1, 100), default=10, show_default=True)
@click.option(
    "--out",
    default=None,
    type=click.Path(dir_okay=False),
    help="Optimised policy (default: POLICY's stem + .optimized.yaml).",
)
@click.option(
    "--stats",
    "stats_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="Per-iteration statistics JSON (default: OUT's stem + .stats.json).",
)
@click.option("--plot/--no-plot", default=True, help="Also write OUT's stem + .stats.png.")
@click.option("--attempts", type=click.IntRange(1, 10), default=3, show_default=True)
@click.option(
    "--score/--no-score",
    default=True,
    help="Have the model score the rules' vagueness after each step.",
)
def optimize(
    policy_file: str,
    model_spec: str | None,
    base_url: str | None,
    max_iterations: int,
    out: str | None,
    stats_path: str | None,
    plot: bool,
    attempts: int,
    score: bool,
) -> None:
    """Refine (with --model) and prune POLICY until nothing changes.

    Redundancy pruning works offline: rules z3 proves implied by the others go, predicates
    that mean the same are merged. Verifiability refinement and vagueness scores need a
    model; each refinement is kept only if z3 confirms it does not weaken the policy.
    """
    from guardagent.authoring.optimize import optimize_policy, plot_stats, write_stats
    from guardagent.llm import ModelCallError

    chat = _chat_model(model_spec, base_url)
    if chat is None:
        click.echo(
            "note: no --model, so only redundancy pruning runs; verifiability "
            "refinement and vagueness scores need a model (e.g. --model openai:gpt-4o "
            "with OPENAI_API_KEY, or --base-url for a local server).",
            err=True,
        )
    try:
        model = load_policy(policy_file)
        result = optimize_policy(
            model, chat, max_iterations=max_iterations, attempts=attempts, score=score
        )
    except PolicyError as exc:
        raise InputError(str(exc)) from None
    except ModelCallError as exc:
        raise click.ClickException(f"model call failed: {exc}") from None
    source = policy_path(policy_file)
    target = Path(out) if out else source.with_name(f"{source.stem}.optimized.yaml")
    target.write_text(result.text, encoding="utf-8")
    stats = Path(stats_path) if stats_path else target.with_name(f"{target.stem}.stats.json")
    write_stats(result, stats)
    click.echo(f"{'iter':>4}  {'step':<11} {'predicates':>10} {'rules':>6} {'vagueness':>9}")
    for step in result.steps:
        vague = "-" if step.vagueness is None else f"{step.vagueness:.2f}"
        click.echo(
            f"{step.iteration:>4}  {step.step:<11} {step.predicates:>10} {step.rules:>6} {vague:>9}"
        )
        for item in step.details.get("rejected", []):
            click.echo(f"      refused refinement of {item['rule']}: {item['reason']}")
    written = [str(target), str(stats)]
    if plot:
        picture = stats.with_suffix(".png")
        plot_stats(result, picture)
        written.append(str(picture))
    click.echo(
        ("converged" if result.converged else f"stopped after {max_iterations} iterations")
        + f"; wrote {', '.join(written)}"
    )


@policy.command(
    epilog=epilog(
        "policy review: 2 when POLICY does not load, a decision does not read, or a",
        "derived file's tag does not check.",
    )
)
@click.argument("policy_file", metavar="POLICY")
@click.option("--approve", multiple=True, metavar="ID", help="Approve a rule (repeatable).")
@click.option("--reject", multiple=True, metavar="ID", help="Reject a rule (repeatable).")
@click.option(
    "--edit",
    multiple=True,
    metavar="ID",
    help="Replace a rule's logic (pair each --edit with a --logic).",
)
@click.option("--logic", multiple=True, metavar="LOGIC", help="The new logic of an --edit.")
@click.option("--all", "show_all", is_flag=True, help="List every rule, not only pending ones.")
@click.option(
    "--accept-unsigned",
    is_flag=True,
    help="A derived file whose tag does not check: show every rule and the diff "
    "against nothing; with decisions, sign it, every rule not decided now "
    "back to proposed.",
)
def review(
    policy_file: str,
    approve: tuple[str, ...],
    reject: tuple[str, ...],
    edit: tuple[str, ...],
    logic: tuple[str, ...],
    show_all: bool,
    accept_unsigned: bool,
) -> None:
    """List POLICY's pending rules with their source text, or record decisions.

    With --approve / --reject / --edit the decisions are written back to POLICY (validated:
    an edit that does not parse or names undeclared predicates is refused) and the rules
    still pending are listed. Rules derived from a guard request (a file in a memory's
    `derived/` folder) are checked first: a file whose tag does not check with the memory's
    key, or older than its latest sign-off, is refused (exit 2) and nothing is re-signed.
    """
    from guardagent.authoring.review import ReviewDecision, pending, review_summary, rule_card
    from guardagent.authoring.signoff import SignoffError, is_derived_file, review_signoff

    if len(edit) != len(logic):
        raise click.UsageError("give one --logic for each --edit")
    path = policy_path(policy_file)
    signoff = None
    if is_derived_file(path):
        try:
            signoff = review_signoff(path, accept_unsigned=accept_unsigned)
        except SignoffError as exc:
            click.echo(
                f"refusing to review {path}: {exc}. Nothing was changed or re-signed: "
                "delete it to derive the rules again, or read every rule with "
                "--accept-unsigned.",
                err=True,
            )
            sys.exit(UNREADABLE)
    try:
        model = (
            load_policy_text(signoff.text, str(path))
            if signoff is not None and signoff.text
            else load_policy(path)
        )
        decisions = [ReviewDecision(r, "approve") for r in approve]
        decisions += [ReviewDecision(r, "reject") for r in reject]
        decisions += [ReviewDecision(r, "edit", text) for r, text in zip(edit, logic, strict=True)]
        if signoff is not None and signoff.problem:
            _show_unsigned(model, signoff.problem)
            show_all = True
        if decisions:
            model = _record(path, model, decisions, signoff)
    except PolicyError as exc:
        raise InputError(str(exc)) from None
    shown = list(model.rules) if show_all else pending(model)
    for rule in shown:
        click.echo(rule_card(rule))
    counts = review_summary(model)
    click.echo(
        ", ".join(f"{n} {state}" for state, n in counts.items() if n)
        + ("; approved_only: only approved and edited rules guard" if model.approved_only else "")
    )


def _show_unsigned(model: PolicyModel, problem: str) -> None:
    """Say loudly that no approval in the file is believed, and show it all as new."""
    from guardagent.authoring.review import diff_policies

    click.echo(
        f"WARNING: {problem}. Its review states are not believed: every rule is "
        "shown, and signing it sets every rule not decided now back to proposed.",
        err=True,
    )
    for change in diff_policies(dataclasses.replace(model, predicates=(), rules=()), model):
        click.echo(str(change))


def _record(
    path: Path, model: PolicyModel, decisions: list[ReviewDecision], signoff: ReviewSignoff | None
) -> PolicyModel:
    """Write the decisions; a derived file is signed at a new sign-off version."""
    from guardagent.authoring.review import apply_decisions
    from guardagent.authoring.signoff import next_version, write_signed
    from guardagent.policy.model import dump_policy

    if signoff is None:
        model = apply_decisions(model, decisions)
        path.write_text(dump_policy(model), encoding="utf-8")
        click.echo(f"recorded {len(decisions)} decision(s) in {path}")
        return model
    fingerprint = signoff.fingerprint
    if fingerprint is None:
        click.echo(
            f"refusing to sign {path}: its tag does not say which guard request it "
            "was derived for; delete it to derive the rules again.",
            err=True,
        )
        sys.exit(UNREADABLE)
    if signoff.problem:  # no approval in the file is believed: only the ones made now
        model = dataclasses.replace(
            model, rules=tuple(dataclasses.replace(r, review="proposed") for r in model.rules)
        )
    model = apply_decisions(model, decisions)
    text = dump_policy(model)
    version = next_version(path, signoff.key, fingerprint, after=signoff.version)
    write_signed(path, signoff.key, fingerprint, text, version)
    click.echo(f"recorded {len(decisions)} decision(s) in {path}")
    click.echo(f"re-signed {path.name} with the memory's key (sign-off version {version})")
    return model


@policy.command(
    epilog=epilog("policy diff: 0 no changes, 1 they differ (as diff(1)), 2 a file does not load.")
)
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@click.option("--json", "as_json", is_flag=True, help="Print the changes as JSON.")
def diff(old: str, new: str, as_json: bool) -> None:
    """Explain what changed from OLD to NEW in rule terms (exit 1 when they differ)."""
    from guardagent.authoring.review import diff_policies

    try:
        changes = diff_policies(load_policy(old, strict=False), load_policy(new, strict=False))
    except PolicyError as exc:
        raise InputError(str(exc)) from None
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(c) for c in changes], indent=2))
    else:
        for change in changes:
            click.echo(str(change))
        if not changes:
            click.echo("no changes in rule terms")
    sys.exit(DENIED if changes else OK)
