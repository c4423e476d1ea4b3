"""Counterfactual verification: a program is checked on the request, not only on its examples.

- :mod:`.events`: edits of an event whose effect on the trusted readers is checked exactly.
- :mod:`.oracles`: oracles per profile kind (expected decisions from the profile's
  table, and the edits that flip each fact, identity and rule trigger).
- :mod:`.policy_oracle`: oracles of policy-model profiles (expected decisions from z3 on the
  trusted predicate function's values), probing with tables from :mod:`.probes` (the
  literals the model's assignment expressions compare with).
- :mod:`.cells`: the role x table x column cells of a permission table, their probes and
  which of them the suite covers.
- :mod:`.suite`: the cases a program must decide right, and the request's coverage problems.
"""

from guardagent.counterfactuals.suite import (
    Case,
    Suite,
    demo_cases,
    literals,
    program_cases,
    quoted_rules,
    request_suite,
    suite_key,
)

__all__ = [
    "Case",
    "Suite",
    "demo_cases",
    "literals",
    "program_cases",
    "quoted_rules",
    "request_suite",
    "suite_key",
]
