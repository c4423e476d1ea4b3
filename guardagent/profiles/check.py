"""Check a profile's programs on its demonstrations, and say in the user's terms what failed.

A profile's program is reused with no model only once it reproduces every demonstration's label
and details (:mod:`guardagent.profiles.verification`). When it does not, the user needs to know
which demonstration, by the id they wrote, and what the program did there ("gave label 0 on
demonstration `nurse-cost`, expected 1"), not that a model should be configured. This module
runs each distinct program on each demonstration and keeps the outcome per demonstration, for
`guardagent profile check` and for the message of a guard that has no verified program.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from guardagent.authoring.derive import derived_note, register_cached
from guardagent.counterfactuals.cells import coverage_note
from guardagent.counterfactuals.rule_conditions import rule_coverage_note
from guardagent.policy.runs import execution_verdict, profile_policy
from guardagent.profiles.loader import BUILTIN_DIR, DemoSpec, Profile
from guardagent.profiles.verification import program_problems, request_problems, same_details
from guardagent.readers.evidence import Unreadable, describe
from guardagent.sandbox.process import SandboxLimits, run_program
from guardagent.tools.verdict import Violations

NO_PROGRAM = (
    "no verified program in memory covers this guard request and no model is configured; "
    "configure a model (model='openai:gpt-4o' or a local base_url) to generate one"
)
"""Why a guard with a verified profile still had no program (memory off, no model)."""

_SHOWN_PROBLEMS = 3

WRITTEN_ON_FIRST_USE = (
    "no program to check yet: it is written by the model on first use (and verified on these "
    "demonstrations before it is reused)"
)
"""What a demonstration with an empty `code` means (a profile written the paper's way): the
model writes the program from the demonstrations' plans, so there is nothing to run yet."""


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _details(details: Violations) -> str:
    return json.dumps(details, sort_keys=True)


@dataclass(frozen=True)
class DemoRun:
    """One program run on one demonstration, next to what the demonstration expects."""

    demo_id: str
    expected_label: int
    expected_details: Violations
    label: int | None
    """0 allowed, 1 denied, None when the program reached no verdict."""
    details: Violations = field(default_factory=list)
    error: str | None = None
    unreadable: list[Unreadable] = field(default_factory=list)

    @property
    def problem(self) -> str | None:
        """What went wrong on this demonstration, in one phrase; None when it matched."""
        name = f"demonstration `{self.demo_id}`"
        if self.label is None:
            if self.unreadable:
                return f"could not read {name} ({_short(describe(self.unreadable))})"
            return f"failed on {name}: {_short(self.error or 'no verdict')}"
        if self.label != self.expected_label:
            return f"gave label {self.label} on {name}, expected {self.expected_label}"
        if self.label == 1 and not same_details(self.details, self.expected_details):
            return (
                f"denied {name} with {_details(self.details)}, expected "
                f"{_details(self.expected_details)}"
            )
        return None


@dataclass(frozen=True)
class ProgramCheck:
    """One distinct program of a profile and how it did on every demonstration."""

    number: int
    code: str
    holders: list[str]
    """Ids of the demonstrations that carry this program."""
    runs: list[DemoRun]
    other: list[str] = field(default_factory=list)
    """What else the verifier refused (data flow, labels, counterfactual variants of a
    demonstration, coverage of the request), beyond the plain runs on the demonstrations."""

    @property
    def problems(self) -> list[str]:
        """Every reason this program is not verified, demonstration by demonstration first."""
        return [run.problem for run in self.runs if run.problem] + self.other

    @property
    def verified(self) -> bool:
        """True when it reproduced every demonstration (it will be reused offline)."""
        return not self.problems


@dataclass(frozen=True)
class ProfileCheck:
    """Every program of a profile checked on every demonstration of it."""

    profile: Profile
    programs: list[ProgramCheck]
    unwritten: list[str] = field(default_factory=list)
    """Ids of the demonstrations with an empty `code`: their program is written by the model
    on first use, so there is none to check yet (not a program that failed)."""
    missing: list[str] = field(default_factory=list)
    """When no program is shipped: what the profile lacks for a written program to verify
    (demonstrations of both labels, the request's coverage), said before any program runs."""

    @property
    def verified(self) -> bool:
        """True when the profile has programs and every one of them verifies."""
        return bool(self.programs) and all(p.verified for p in self.programs)

    @property
    def model_written(self) -> bool:
        """True when the profile ships no program at all: the model writes it on first use."""
        return not self.programs and bool(self.unwritten)

    @property
    def usable(self) -> bool:
        """True when at least one program verifies, so offline checks can decide."""
        return any(p.verified for p in self.programs)


def _run(code: str, demo: DemoSpec, profile: Profile, limits: SandboxLimits | None) -> DemoRun:
    result = run_program(code, profile.tools(), demo.agent_input, demo.agent_output, limits)
    verdict, error = execution_verdict(
        result, profile_policy(profile), threshold=profile.safety_threshold
    )
    if verdict is None:
        return DemoRun(
            demo.id,
            demo.label,
            demo.details,
            None,
            error=result["error"] if not result["ok"] else error,
            unreadable=result["unreadable"],
        )
    return DemoRun(
        demo.id,
        demo.label,
        demo.details,
        0 if verdict["allowed"] else 1,
        details=verdict["violations"],
    )


def _labels_problem(demos: list[DemoSpec]) -> str | None:
    labels = {d.label for d in demos}
    if labels == {0, 1}:
        return None
    have = " and ".join(f"label {label}" for label in sorted(labels)) or "none"
    return (
        "verification needs demonstrations of both an allowed (label 0) and a denied "
        f"(label 1) event; the profile has {have} only"
    )


def _other_problems(code: str, profile: Profile, runs: list[DemoRun]) -> list[str]:
    """What the verifier refuses beyond the plain runs on the demonstrations.

    Data flow, counterfactual variants and coverage come from
    :func:`guardagent.profiles.verification.request_problems`; a demonstration that failed plainly
    also fails its variants, and those repeats (messages that start with its id) are left
    out. The verifier (:func:`guardagent.profiles.verification.program_problems`) stays the
    authority: should it refuse a program this report found nothing against, its own
    reasons are shown.
    """
    failed = {run.demo_id for run in runs if run.problem}
    labels = _labels_problem(profile.demonstrations)
    found = ([labels] if labels else []) + [
        p
        for p in request_problems(code, profile)
        if not any(p.startswith(f"{demo}: ") for demo in failed)
    ]
    if not found and not failed:
        found = program_problems(code, profile)
    return found


def check_profile(profile: Profile, limits: SandboxLimits | None = None) -> ProfileCheck:
    """Run each distinct program of `profile` on each of its demonstrations.

    Each demonstration is run and compared as
    :func:`guardagent.profiles.verification.verify_program` compares it (label, and the details
    of a denial as sets), and kept apart so the outcome can be shown by the ids the user wrote;
    whatever else verification refuses (data flow, counterfactual variants, coverage of the
    request) is reported beside them.
    """
    register_cached(profile)  # rules derived from the request judge its programs too
    demos = profile.demonstrations
    programs = []
    shipped = [code for code in dict.fromkeys(d.code for d in demos) if code.strip()]
    for number, code in enumerate(shipped, start=1):
        runs = [_run(code, d, profile, limits) for d in demos]
        programs.append(
            ProgramCheck(
                number=number,
                code=code,
                holders=[d.id for d in demos if d.code == code],
                runs=runs,
                other=_other_problems(code, profile, runs),
            )
        )
    unwritten = [d.id for d in demos if not d.code.strip()]
    missing: list[str] = []
    if unwritten and not programs:  # what a program, once written, would be refused for
        from guardagent.counterfactuals import request_suite

        labels = _labels_problem(demos)
        missing = ([labels] if labels else []) + [
            f"the request is not covered: {p}" for p in request_suite(profile).problems
        ]
    return ProfileCheck(profile=profile, programs=programs, unwritten=unwritten, missing=missing)


_CHECKS: dict[tuple[str, tuple[str, ...]], ProfileCheck] = {}


def cached_check(profile: Profile) -> ProfileCheck:
    """:func:`check_profile`, once per process and profile content."""
    key = (profile.fingerprint, tuple(d.code for d in profile.demonstrations))
    if key not in _CHECKS:
        _CHECKS[key] = check_profile(profile)
    return _CHECKS[key]


def profile_ref(profile: Profile) -> str:
    """How the user names the profile on the command line: built-in name, else its folder."""
    if profile.root.resolve().parent == BUILTIN_DIR.resolve():
        return profile.root.name
    return str(profile.root)


def _program_phrase(check: ProgramCheck, several: bool) -> str:
    problems = check.problems
    shown = "; ".join(problems[:_SHOWN_PROBLEMS])
    if len(problems) > _SHOWN_PROBLEMS:
        shown += f"; and {len(problems) - _SHOWN_PROBLEMS} more"
    if not several:
        return f"its program {shown}"
    holders = ", ".join(f"`{h}`" for h in check.holders)
    return f"the program of demonstration {holders} {shown}"


def unverified_note(profile: Profile) -> str | None:
    """One line naming every program of `profile` that does not verify and why; None if all do.

    Meant to be said once (a log line at start-up), not once per demonstration.
    """
    check = cached_check(profile)
    bad = [p for p in check.programs if not p.verified]
    if not bad:
        return None
    several = len(check.programs) > 1
    what = "; ".join(_program_phrase(p, several) for p in bad)
    used = "the others are used" if check.usable else "so it has no verified program"
    return (
        f"profile {profile.name!r}: {what}. Not used, {used}; see "
        f"`guardagent profile check {profile_ref(profile)}`"
    )


def explain_no_program(profile: Profile) -> str:
    """Why a guard under `profile` had no program to run, and what the user can do.

    When the profile's own programs do not verify, it says which demonstration failed and
    how, by the user's ids; otherwise (memory reuse off, no model) the generic reason.
    """
    if not profile.demonstrations:
        return (
            f"profile {profile.name!r} has no demonstrations, so no program to verify; "
            "add demonstrations with a program, or configure a model (model="
            "'openai:gpt-4o' or a local base_url) to generate one"
        )
    check = cached_check(profile)
    if check.usable:
        return NO_PROGRAM
    if check.model_written:
        lacks = "".join(f"; {problem}" for problem in check.missing)
        return (
            f"profile {profile.name!r} ships no program (its demonstrations have an empty "
            f"`code`): {WRITTEN_ON_FIRST_USE}{lacks}; configure a model "
            "(model='openai:gpt-4o' or a local base_url) to write it"
        )
    several = len(check.programs) > 1
    what = "; ".join(_program_phrase(p, several) for p in check.programs)
    return (
        f"profile {profile.name!r} has no verified program: {what}. Fix the program or the "
        f"demonstration and check with `guardagent profile check {profile_ref(profile)}`; or "
        "configure a model (model='openai:gpt-4o' or a local base_url) to generate one"
    )


def _cell_label(label: int | None, details: Violations) -> str:
    if label is None:
        return "no verdict"
    return "allow" if label == 0 else f"deny {_short(_details(details), 48)}"


def render_check(check: ProfileCheck) -> str:
    """A plain-text table per program: each demonstration, expected, got, and the verdict."""
    profile = check.profile
    lines = [
        f"profile {profile.name!r} ({profile.root}): {len(profile.demonstrations)} "
        f"demonstration(s), {len(check.programs)} program(s)"
    ]
    lines += [note] if (note := derived_note(profile)) else []  # rules derived from the request
    lines += [cells] if (cells := coverage_note(profile)) else []  # a PERMISSIONS table's cells
    lines += [rules] if (rules := rule_coverage_note(profile)) else []  # category rules' conditions
    for program in check.programs:
        status = "verified" if program.verified else "NOT VERIFIED"
        lines += [
            "",
            f"program {program.number} (in {', '.join(program.holders)}; "
            f"{len(program.code.splitlines())} lines): {status}",
        ]
        rows = [("demonstration", "expected", "got", "result")]
        for run in program.runs:
            rows.append(
                (
                    run.demo_id,
                    _cell_label(run.expected_label, run.expected_details),
                    _cell_label(run.label, run.details),
                    "ok" if run.problem is None else "FAIL: " + run.problem,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines += [
            "  " + "  ".join(r[i].ljust(widths[i]) for i in range(3)) + "  " + r[3] for r in rows
        ]
        lines += [
            f"  also refused: {_short(other, 1000 if 'not covered' in other else 300)}"
            for other in program.other
        ]  # what the request lacks is said in full
    if check.unwritten:
        ids = ", ".join(check.unwritten)
        lines += ["", f"demonstration(s) with an empty `code` ({ids}): {WRITTEN_ON_FIRST_USE}"]
        lines += [f"  missing: {_short(problem, 1000)}" for problem in check.missing]
    good = sum(p.verified for p in check.programs)
    lines.append("")
    if check.model_written:
        lines.append(
            "0 program(s) shipped: the model writes one on first use; offline (no "
            "model), every event under this profile is denied (no program)"
        )
    elif check.verified:
        lines.append(
            f"{good} of {len(check.programs)} program(s) verified: offline checks "
            "reuse them with no model call"
        )
    elif check.usable:
        lines.append(
            f"{good} of {len(check.programs)} program(s) verified; the others are not used"
        )
    else:
        lines.append(
            f"0 of {len(check.programs)} program(s) verified: offline, every event "
            "under this profile is denied (no verified program); fix the program or "
            "the demonstrations, or configure a model"
        )
    return "\n".join(lines)
