"""Oracles of policy-model profiles: expected decisions verified by z3, not read off a table.

A profile that names a policy model (``policy_model:`` in its profile.yaml) has no rule or
permission table in its program: the program reads the event and assigns predicates, and
the graph's `verify` node decides every rule. Its oracle does the same from trusted parts
only: the profile's toolbox readers read the event, the profile's trusted predicate function
(a toolbox function of :mod:`guardagent.policy.shipped`, e.g. ``eicu_ac_predicates``) turns
their output into predicate values, exactly as the program path's readers would give them,
and :func:`guardagent.policy.verify.verify_event` decides. Nothing comes from the program
under test.

The edits that probe the request are the table oracles' (identity, user facts across each
rule's edge, each rule's trigger, reader fields), run on tables built from the policy
model's assignment expressions (:mod:`.probes`). A profile is matched to the kind whose
predicate function and readers its toolbox holds.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from typing_extensions import override

from guardagent.counterfactuals.cells import cell_edits
from guardagent.counterfactuals.events import Event
from guardagent.counterfactuals.oracles import (
    AccessOracle,
    CategoryRulesOracle,
    Edit,
    Expected,
    Oracle,
    ToolRulesOracle,
)
from guardagent.counterfactuals.probes import (
    TOOL_READERS,
    access_table,
    category_table,
    rule_name,
    tool_table,
)
from guardagent.policy.model import PolicyModel
from guardagent.profiles.loader import Profile

Predicates = dict[str, bool | None]


class PolicyOracle(Oracle):
    """Expected decisions from a policy model over the trusted predicate function's values.

    Attributes:
        model: The profile's policy model.
        threshold: The profile's safety threshold (None: the model's), as `verify` uses it.
        probe: The table oracle whose edits probe this request (on the probe table).
    """

    kind = "policy model"
    predicate_function: ClassVar[str]
    prober: ClassVar[type[Oracle]]

    def __init__(self, model: PolicyModel, profile: Profile) -> None:
        super().__init__(self.probe_table(model), profile)
        self.model = model
        self.threshold = profile.safety_threshold
        self.probe = self.prober(self.table, profile)

    @classmethod
    @abstractmethod
    def probe_table(cls, model: PolicyModel) -> Any:
        """The table (in the prober's shape) the edits are generated from."""

    @abstractmethod
    def predicates(self, event: Event) -> Predicates:
        """The predicate function's values on what the readers read in `event`."""

    @property
    @override
    def source(self) -> str:
        return f"policy model {self.model.name!r}"

    @override
    def rules(self) -> list[str]:
        return [rule_name(r) for r in self.model.rules]

    @override
    def decide(self, event: Event) -> Expected:
        """What `verify` decides on the trusted predicate values (reader errors propagate)."""
        from guardagent.policy.verify import verify_event  # z3, numpy: on first use

        verdict = verify_event(
            self.model, self.predicates(event), threshold=self.threshold, remediation=False
        )
        denying = tuple(rule_name(self.model.by_id[r.id]) for r in verdict.denying())
        return Expected(0 if verdict.allowed else 1, verdict.violations, denying)

    @override
    def edits(self, event: Event) -> Iterator[Edit]:
        yield from self.probe.edits(event)

    @override
    def slots(self, event: Event, text: str) -> Iterator[Edit]:
        yield from self.probe.slots(event, text)

    def _call(self, *args: Any) -> Predicates:
        values = self.functions[self.predicate_function](*args)
        return dict(values)


class AccessPolicyOracle(PolicyOracle):
    """EHRAgent access control (`eicu_ac_predicates`): identity and the columns the code reads."""

    kind = "policy model (access control)"
    predicate_function = "eicu_ac_predicates"
    prober = AccessOracle
    needs = frozenset({"parse_identity", "ehr_accessed_columns", "eicu_ac_predicates"})

    def __init__(self, model: PolicyModel, profile: Profile) -> None:  # noqa: D107
        super().__init__(model, profile)
        self._probed: set[str] = set()  # identities whose cells are probed (.cells)

    @classmethod
    @override
    def probe_table(cls, model: PolicyModel) -> Any:
        return access_table(model)

    @override
    def edits(self, event: Event) -> Iterator[Edit]:
        """Identity flips, then each identity reading its allowed, denied and all columns."""
        yield from self.probe.edits(event)
        yield from (Edit(what, new) for what, new in cell_edits(self, event, self._probed))

    @override
    def predicates(self, event: Event) -> Predicates:
        return self._call(
            self._read("parse_identity", event), self._read("ehr_accessed_columns", event)
        )


class CategoryPolicyOracle(PolicyOracle):
    """A web agent's action category and the user's facts (`mind2web_sc_predicates`)."""

    kind = "policy model (category rules)"
    predicate_function = "mind2web_sc_predicates"
    prober = CategoryRulesOracle
    needs = frozenset(
        {
            "parse_user_info",
            "parse_task",
            "seeact_final_action",
            "web_action_category",
            "mind2web_sc_predicates",
        }
    )

    @classmethod
    @override
    def probe_table(cls, model: PolicyModel) -> Any:
        return category_table(model)

    @override
    def predicates(self, event: Event) -> Predicates:
        category = self.functions["web_action_category"](
            self._read("parse_task", event), self._read("seeact_final_action", event)
        )
        return self._call(category, self._read("parse_user_info", event))


class ToolPolicyOracle(PolicyOracle):
    """A tool-using agent's pending calls and the user's facts (`tool_calls_predicates`)."""

    kind = "policy model (tool-call rules)"
    predicate_function = "tool_calls_predicates"
    prober = ToolRulesOracle
    needs = frozenset({"parse_user_info", "tool_calls_predicates"})

    @classmethod
    @override
    def fits(cls, profile: Profile) -> bool:
        return super().fits(profile) and any(r in profile.toolbox for r in TOOL_READERS)

    @classmethod
    @override
    def probe_table(cls, model: PolicyModel) -> Any:
        return tool_table(model)

    @override
    def predicates(self, event: Event) -> Predicates:
        reader = next(r for r in TOOL_READERS if r in self.readers)
        return self._call(self._read(reader, event), self._read("parse_user_info", event))


POLICY_KINDS: tuple[type[PolicyOracle], ...] = (
    AccessPolicyOracle,
    CategoryPolicyOracle,
    ToolPolicyOracle,
)
"""Policy-model oracles, by the trusted predicate function a profile's toolbox holds."""
