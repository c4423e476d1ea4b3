"""The `assign` call: how a guard program gives predicates their values under a policy model.

Like the verdict calls (:mod:`guardagent.tools.verdict`), values are checked strictly
(`type(x) is bool`, not truthiness), so a program cannot pass an object that pretends to be a
boolean, and assigning a predicate twice is an error rather than a silent override. What a
run assigned is plain JSON (`{"name": {"value": true|false|null, "probability": p|null}}`),
so it crosses the sandbox boundary as data and is re-validated on the other side with
:meth:`PredicateRecorder.from_json`.

`value=None` says "I could not tell": the predicate stays open, and the verifier decides
whether the rules hold whatever its value (fail closed: a rule that might be violated
denies). `probability` is the program's confidence in the value it assigns (e.g. from a
model's token log-probabilities); None means "use the policy's calibrated default for this
predicate, else certain".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict

from guardagent.tools.registry import Toolbox, ToolSpec

ASSIGN_NAMES = frozenset({"assign"})
"""Names the sandbox binds for policy programs (and a program may not rebind)."""

MAX_PREDICATES = 10_000
MAX_NAME_CHARS = 200
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class Assignment(TypedDict):
    """One predicate's value as assigned by a program."""

    value: bool | None
    probability: float | None


Assignments = dict[str, Assignment]


class PredicateError(Exception):
    """An `assign` call with wrong types, or a second assignment of one predicate."""


def _check_name(name: Any) -> str:
    if type(name) is not str:
        raise PredicateError("assign(): name must be a str")
    if name in _NAMES:
        return name
    if not name or len(name) > MAX_NAME_CHARS or name[0].isdigit() or not set(name) <= _NAME_CHARS:
        raise PredicateError(f"assign(): {name[:40]!r} is not a predicate name")
    if len(_NAMES) < MAX_KNOWN_NAMES:
        _NAMES.add(name)
    return str(name)


_NAMES: set[str] = set()
MAX_KNOWN_NAMES = 4096
"""Names found valid before (a policy's few predicates): checked again only beyond these."""


def _check_probability(probability: Any) -> float | None:
    if probability is None:
        return None
    if type(probability) not in (float, int):
        raise PredicateError("assign(): probability must be a number in [0, 1] or None")
    value = float(probability)
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise PredicateError("assign(): probability must be in [0, 1]")
    return value


class PredicateRecorder:
    """Collects the predicate assignments of one program run."""

    def __init__(self) -> None:
        self.assignments: Assignments = {}

    def assign(self, name: str, value: bool | None, probability: float | None = None) -> None:
        """Give a predicate of the policy model its value for this event.

        Args:
            name: The predicate's name as declared in the policy model.
            value: True or False; None when the program cannot tell (the predicate stays
                open and the verifier denies if a rule might then be violated).
            probability: Confidence in `value` (e.g. from a model's answer); None uses the
                policy's calibrated default for the predicate, else 1.0.
        """
        key = _check_name(name)
        if value is not None and type(value) is not bool:
            raise PredicateError("assign(): value must be True, False or None")
        p = _check_probability(probability)
        if key in self.assignments:
            raise PredicateError(f"assign(): {key!r} was already assigned")
        if len(self.assignments) >= MAX_PREDICATES:
            raise PredicateError(f"assign(): more than {MAX_PREDICATES} predicates")
        self.assignments[key] = Assignment(
            value=None if value is None else bool(value), probability=p
        )

    def toolbox(self) -> Toolbox:
        """`assign` bound to this recorder, to merge into a program's globals."""
        return Toolbox([ToolSpec("assign", self.assign, group="policy")])

    def to_json(self) -> Assignments:
        """A copy of the assignments as JSON-able data."""
        return {
            k: Assignment(value=v["value"], probability=v["probability"])
            for k, v in self.assignments.items()
        }

    @classmethod
    def from_json(cls, raw: Any) -> Assignments:
        """Re-validate assignments that crossed a process boundary (the child is untrusted).

        Raises:
            PredicateError: anything but ``{name: {"value": bool|None, "probability":
                float|None}}`` within the limits.
        """
        if type(raw) is not dict:
            raise PredicateError("predicates must be a JSON object")
        recorder = cls()
        for name, item in raw.items():
            if type(item) is not dict or set(item) != {"value", "probability"}:
                raise PredicateError(f"bad assignment for {str(name)[:40]!r}")
            recorder.assign(name, item["value"], item["probability"])
        return recorder.to_json()


def normalize(values: Mapping[str, Any]) -> Assignments:
    """Accept ``{name: bool | None | Assignment}`` (handy in Python) as strict assignments."""
    recorder = PredicateRecorder()
    for name, item in values.items():
        if type(item) is dict:
            recorder.assign(name, item.get("value"), item.get("probability"))
        else:
            recorder.assign(name, item)
    return recorder.to_json()
