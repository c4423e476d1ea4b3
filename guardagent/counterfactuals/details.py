"""Whether two decisions report the same violations (shared by verification and its oracles).

Kept apart from :mod:`guardagent.profiles.verification` so that the oracles, which judge what a
decision should report, do not import the verifier that imports them.
"""

from __future__ import annotations

from guardagent.tools.verdict import Violations


def same_details(a: Violations, b: Violations) -> bool:
    """Violations compared as sets (order of tables, columns and rules is not meaningful)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return {t: set(c) for t, c in a.items() if c} == {t: set(c) for t, c in b.items() if c}
    if isinstance(a, list) and isinstance(b, list):
        return set(a) == set(b)
    return not a and not b
