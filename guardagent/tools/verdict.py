"""The verdict calls: the only way a guard program can say allow or deny.

A program's printed text is never parsed for a decision. Values are checked strictly
(`type(x) is str`, not `isinstance`), so a program cannot pass an object that pretends to be
a string or a boolean, and a second verdict is an error rather than a silent override.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from guardagent.tools.registry import Toolbox, ToolSpec

VERDICT_NAMES = frozenset({"allow", "deny"})

Violations = dict[str, list[str]] | list[str]


class Verdict(TypedDict):
    """What a program decided, as plain JSON-able data."""

    allowed: bool
    violations: Violations
    reason: str


class VerdictError(Exception):
    """A verdict call with wrong types, or a second verdict in one run."""


def _clean_violations(violations: Any) -> Violations:
    if type(violations) is list:
        if not all(type(v) is str for v in violations):
            raise VerdictError("deny(): violations must be a list of str")
        return [str(v) for v in violations]
    if type(violations) is dict:
        out: dict[str, list[str]] = {}
        for key, cols in violations.items():
            if type(key) is not str or type(cols) is not list:
                raise VerdictError("deny(): violations must map str -> list of str")
            if not all(type(c) is str for c in cols):
                raise VerdictError("deny(): violations must map str -> list of str")
            out[str(key)] = [str(c) for c in cols]
        return out
    raise VerdictError("deny(): violations must be a list of rule texts or a dict table -> columns")


class VerdictRecorder:
    """Collects the single verdict of one program run."""

    def __init__(self) -> None:
        self.verdict: Verdict | None = None

    def _record(self, verdict: Verdict) -> None:
        if self.verdict is not None:
            raise VerdictError("a verdict was already given; call allow() or deny() once")
        self.verdict = verdict

    def allow(self, reason: str = "") -> None:
        """Let the event pass: no guard request is violated.

        Args:
            reason: One sentence saying why the event complies.
        """
        if type(reason) is not str:
            raise VerdictError("allow(): reason must be a str")
        self._record(Verdict(allowed=True, violations=[], reason=str(reason)))

    def deny(self, violations: Violations, reason: str = "") -> None:
        """Block the event and say what it violates.

        Args:
            violations: For access control, a dict table -> list of columns the user may not
                access; for rule checks, a list of the violated rules' exact texts.
            reason: One sentence saying why the event is denied.
        """
        if type(reason) is not str:
            raise VerdictError("deny(): reason must be a str")
        self._record(
            Verdict(allowed=False, violations=_clean_violations(violations), reason=str(reason))
        )

    def toolbox(self) -> Toolbox:
        """`allow` and `deny` bound to this recorder, to merge into a program's globals."""
        return Toolbox(
            [
                ToolSpec("allow", self.allow, group="verdict"),
                ToolSpec("deny", self.deny, group="verdict"),
            ]
        )
