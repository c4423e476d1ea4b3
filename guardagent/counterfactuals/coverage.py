"""What a policy model would cover as a profile's oracle: for `guardagent policy check`.

`profile check` prints the coverage of a profile's own oracle (its table, its policy model,
or rules derived from its request). A deployer editing a policy model, or reviewing rules a
model derived, wants the same before the file guards anything: which identity x column cells
and which rule conditions the counterfactuals built from it and the profile's
demonstrations would probe, and which not (then verification would trust no program). The
oracle is made from the given model exactly as verification makes it: the policy-model
oracle of the predicate function the profile's toolbox holds, else the oracle of derived
rules (their own assignment expressions); nothing is registered or stored.
"""

from __future__ import annotations

from guardagent.counterfactuals.cells import cells_note, coverage, oracle_cells
from guardagent.counterfactuals.events import Event
from guardagent.counterfactuals.oracles import Oracle
from guardagent.counterfactuals.rule_conditions import conditions_note
from guardagent.counterfactuals.suite import oracle_cases
from guardagent.policy.model import PolicyModel
from guardagent.profiles.loader import Profile
from guardagent.sandbox.policy import AST_LOCK


def model_oracle(model: PolicyModel, profile: Profile) -> Oracle:
    """The oracle `model` gives `profile` (a shipped predicate function's, else derived)."""
    from guardagent.counterfactuals.derived import DerivedOracle
    from guardagent.counterfactuals.policy_oracle import POLICY_KINDS

    kind = next((k for k in POLICY_KINDS if k.fits(profile)), None)
    return kind(model, profile) if kind is not None else DerivedOracle(model, profile)


def coverage_lines(model: PolicyModel, profile: Profile) -> list[str]:
    """Lines saying what the model would cover as `profile`'s oracle, and what it lacks.

    The oracle's kind; its access cells and its rule conditions probed (each when it has
    them); then every coverage problem, which would make verification trust no program.
    """
    oracle = model_oracle(model, profile)
    with AST_LOCK:  # the readers parse code here, in this process (see AST_LOCK)
        cases, problems, conditions = oracle_cases(oracle, profile)
        cells = oracle_cells(oracle)
        probes = [
            (Event(d.agent_input, d.agent_output), d.label, d.details)
            for d in profile.demonstrations
        ]
        probes += [(Event(c.agent_input, c.agent_output), c.label, c.details) for c in cases]
        found = None if cells is None else coverage(cells, oracle.readers, probes)
    lines = [
        f"as the oracle of profile {profile.name!r} ({oracle.kind}): {len(cases)} "
        "counterfactual cases from its demonstrations"
    ]
    lines += [cells_note(found, oracle)] if found is not None else []
    lines += [conditions_note(conditions)] if conditions is not None else []
    if found is None and conditions is None:
        lines.append(
            "no cell or condition coverage: the profile's readers fit no access or "
            "category rules of this model; each rule must still be violated"
        )
    lines += [f"not covered (no program would verify): {p}" for p in problems]
    return lines
