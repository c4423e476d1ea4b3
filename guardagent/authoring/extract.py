"""`policy extract`: policy documents -> a policy model whose every rule cites its source.

One model question per document section (:mod:`guardagent.authoring.documents`): the policies
it states, each with its verbatim text and paragraph reference, its predicates and rules.
An answer is accepted only when the span really is in the cited paragraph, the logic
parses, every name is declared and kinds agree with what earlier sections declared;
otherwise the problems go back to the model (bounded retries) and a section that still
fails is reported, never skipped quietly. The assembled model goes through the policy
loader (the format is the contract) and `policy check` (z3), so a document the model read
into contradictory rules is caught before anyone guards with it.

Extracted rules are ``review: proposed`` and the policy is ``approved_only: true``: nothing
extracted guards until a human signs it off (:mod:`guardagent.authoring.review`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from guardagent.authoring.answers import DEFAULT_ATTEMPTS, ask_json
from guardagent.authoring.documents import Section, normalize_space, read_document, slug
from guardagent.authoring.prompts import EXTRACT_SYSTEM, EXTRACT_USER
from guardagent.llm import ModelCallError
from guardagent.policy.check import CheckReport, check_model
from guardagent.policy.formula import render, variables
from guardagent.policy.grammar import LogicSyntaxError, parse_logic
from guardagent.policy.model import (
    FORMAT,
    PolicyModel,
    Predicate,
    Rule,
    dump_policy,
    load_policy_text,
)

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # predicate identifiers, not code


class PredicateSpec(BaseModel):
    """A predicate as the model declares it."""

    name: str
    kind: Literal["action", "condition"]
    description: str = ""


class RuleSpec(BaseModel):
    """A rule as the model states it."""

    logic: str
    policy: str = ""
    remediation: str = ""
    risk_types: list[str] = Field(default_factory=list)


class PolicySpec(BaseModel):
    """One policy of a section: what it says, where, and its rules."""

    definition: str
    scope: str = ""
    text: str
    reference: str
    predicates: list[PredicateSpec] = Field(default_factory=list)
    rules: list[RuleSpec] = Field(min_length=1)


class SectionAnswer(BaseModel):
    """The model's whole answer for a section."""

    policies: list[PolicySpec]


@dataclass
class SectionOutcome:
    """What happened to one section (for the report; failures are listed, not dropped)."""

    ref: str
    title: str
    attempts: int = 0
    policies: int = 0
    rules: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the section's answer was accepted."""
        return not self.errors


@dataclass
class Extraction:
    """An extraction run: the policy model, what each section gave, what z3 found."""

    model: PolicyModel | None
    text: str
    sections: list[SectionOutcome]
    check: CheckReport | None = None

    @property
    def failed(self) -> list[SectionOutcome]:
        """Sections whose answer was never accepted."""
        return [s for s in self.sections if not s.ok]

    @property
    def ok(self) -> bool:
        """Every section accepted and the policy passes `policy check`."""
        return not self.failed and self.check is not None and self.check.ok

    def to_json(self) -> dict[str, object]:
        """The report written beside the policy (``<out>.report.json``)."""
        return {
            "ok": self.ok,
            "sections": [
                {
                    "ref": s.ref,
                    "title": s.title,
                    "attempts": s.attempts,
                    "policies": s.policies,
                    "rules": s.rules,
                    "errors": s.errors,
                }
                for s in self.sections
            ],
            "failed_sections": [s.ref for s in self.failed],
            "check": None
            if self.check is None
            else {
                "ok": self.check.ok,
                "findings": [
                    {
                        "severity": f.severity,
                        "code": f.code,
                        "message": f.message,
                        "rules": list(f.rules),
                    }
                    for f in self.check.findings
                    if f.severity != "info"
                ],
            },
            "predicates": 0 if self.model is None else len(self.model.predicates),
            "rules_count": 0 if self.model is None else len(self.model.rules),
        }


def _same_words(text: str) -> str:
    """Whitespace and typographic quotes normalised, for span matching."""
    table = str.maketrans(
        {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
    )
    return normalize_space(text.translate(table))


def _paragraph_ref(section: Section, ref: str) -> str:
    """The cited paragraph's full reference (models often drop the file part or brackets)."""
    ref = ref.strip().strip("[]").strip()
    known = {p.ref for p in section.paragraphs}
    if ref not in known and f"{section.file}#{ref}" in known:
        return f"{section.file}#{ref}"
    return ref


class _Builder:
    """Accumulates predicates and rules across sections, validating each answer."""

    def __init__(self) -> None:
        self.predicates: dict[str, Predicate] = {}
        self.rules: list[Rule] = []
        self.ids: set[str] = set()

    def known(self) -> str:
        if not self.predicates:
            return "(none yet)"
        return "\n".join(
            f"* {p.name} ({p.kind}): {p.description}" for p in self.predicates.values()
        )

    def problems(self, section: Section, answer: SectionAnswer) -> list[str]:
        """Everything wrong with an answer; empty means it can be added as is."""
        paragraphs = {p.ref: p.text for p in section.paragraphs}
        errors: list[str] = []
        for i, policy in enumerate(answer.policies):
            where = f"policies[{i}]"
            para = paragraphs.get(_paragraph_ref(section, policy.reference))
            if para is None:
                errors.append(
                    f"{where}.reference {policy.reference!r} is not a paragraph of "
                    f"this section (use one of: {', '.join(paragraphs)})"
                )
            elif not policy.text.strip() or _same_words(policy.text) not in _same_words(para):
                errors.append(
                    f"{where}.text is not a verbatim span of {policy.reference}: "
                    "copy the exact words of the paragraph"
                )
            kinds = {n: p.kind for n, p in self.predicates.items()}
            for pred in policy.predicates:
                if not _NAME.fullmatch(pred.name):
                    errors.append(
                        f"{where}: predicate name {pred.name!r} must use letters, "
                        "digits and _ (no leading digit)"
                    )
                elif kinds.get(pred.name, pred.kind) != pred.kind:
                    errors.append(
                        f"{where}: predicate {pred.name!r} is already declared as "
                        f"{kinds[pred.name]}, not {pred.kind}"
                    )
                else:
                    kinds[pred.name] = pred.kind
            for j, rule in enumerate(policy.rules):
                try:
                    formula = parse_logic(rule.logic)
                except LogicSyntaxError as exc:
                    errors.append(
                        f"{where}.rules[{j}].logic {rule.logic!r}: {exc.message} "
                        f"(column {exc.column})"
                    )
                    continue
                missing = [n for n in variables(formula) if n not in kinds]
                if missing:
                    errors.append(
                        f"{where}.rules[{j}].logic uses undeclared predicate(s) "
                        f"{', '.join(missing)}: declare them in predicates"
                    )
        return errors

    def add(self, section: Section, answer: SectionAnswer) -> list[str]:
        """Add a validated answer; returns the new rule ids."""
        added: list[str] = []
        paragraphs = {p.ref: p.text for p in section.paragraphs}
        for policy in answer.policies:
            for pred in policy.predicates:
                if pred.name not in self.predicates:
                    self.predicates[pred.name] = Predicate(
                        pred.name, pred.kind, pred.description.strip()
                    )
            ref = _paragraph_ref(section, policy.reference)
            span = _same_words(policy.text)
            paragraph = _same_words(paragraphs[ref])
            start = paragraph.find(span)
            span = paragraph[start : start + len(span)]  # the document's words, not the model's
            base = (
                f"{slug(section.headings[-1]) if section.headings else 'top'}-"
                f"{ref.rsplit(':', 1)[-1]}"
            )
            policy_text = policy.definition.strip()
            if policy.scope.strip():
                policy_text += f" (scope: {policy.scope.strip()})"
            for rule in policy.rules:
                formula = parse_logic(rule.logic)
                rule_id = self._fresh_id(base)
                self.rules.append(
                    Rule(
                        id=rule_id,
                        logic=render(formula),
                        formula=formula,
                        template="",
                        risk_types=tuple(rule.risk_types),
                        source=ref,
                        policy=rule.policy.strip() or policy_text,
                        remediation=rule.remediation.strip(),
                        span=span,
                        review="proposed",
                    )
                )
                added.append(rule_id)
        return added

    def _fresh_id(self, base: str) -> str:
        n = 1
        while f"{base}-{n}" in self.ids:
            n += 1
        self.ids.add(f"{base}-{n}")
        return f"{base}-{n}"


def assemble(
    name: str, description: str, predicates: Sequence[Predicate], rules: Sequence[Rule]
) -> tuple[PolicyModel, str]:
    """The policy model as the loader reads it (the file format is the contract).

    Raises:
        PolicyError: the assembled model does not load (a bug here, not the model's).
    """
    draft = PolicyModel(
        name=name,
        version="1",
        description=description,
        predicates=tuple(predicates),
        rules=tuple(rules),
        approved_only=True,
    )
    text = dump_policy(draft)
    return load_policy_text(text, f"{name}.yaml"), text


def extract_policy(
    documents: Sequence[str | Path],
    model: BaseChatModel,
    *,
    name: str | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    progress: bool = True,
) -> Extraction:
    """Extract a policy model from documents (see the module docstring).

    Raises:
        DocumentError: a document cannot be read.
        ModelCallError: the model cannot be reached at all.
    """
    from tqdm import tqdm

    sections = [s for doc in documents for s in read_document(doc)]
    builder = _Builder()
    outcomes: list[SectionOutcome] = []
    bar = tqdm(sections, desc="extract", unit="section", disable=not progress, leave=False)
    for section in bar:
        bar.set_postfix_str(section.title[:40])
        outcome = SectionOutcome(section.ref, section.title)
        outcomes.append(outcome)
        user = EXTRACT_USER.format(
            title=section.title, ref=section.ref, known=builder.known(), text=section.text
        )

        def validate(answer: SectionAnswer, section: Section = section) -> list[str]:
            return builder.problems(section, answer)

        try:
            answer = ask_json(
                model,
                EXTRACT_SYSTEM,
                user,
                SectionAnswer,
                validate,
                attempts=attempts,
                run_name="guardagent.authoring.extract",
            )
        except ModelCallError as exc:
            outcome.errors = [f"model call failed: {exc}"]
            outcome.attempts += 1
            continue
        outcome.attempts = answer.attempts
        if answer.value is None:
            outcome.errors = answer.errors
            continue
        outcome.policies = len(answer.value.policies)
        outcome.rules = builder.add(section, answer.value)
    bar.close()
    stem = name or (Path(documents[0]).stem if documents else "extracted")
    files = ", ".join(Path(d).name for d in documents)
    policy, text = assemble(
        stem,
        f"Extracted from {files}; every rule awaits review.",
        list(builder.predicates.values()),
        builder.rules,
    )
    return Extraction(policy, text, outcomes, check_model(policy))


__all__ = ["FORMAT", "Extraction", "SectionOutcome", "extract_policy", "assemble"]
