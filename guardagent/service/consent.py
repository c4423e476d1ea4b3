"""Consent records that reach the guard from outside its process: read, and signed, or refused.

A reviewer's approval lets a call run that the policy would deny, so a record counts only if
the deployment wrote it: each must read as a record and carry the deployment's signature
(``GUARDAGENT_TRACE_KEY``, :meth:`~guardagent.trace.Consent.signed`). The local
`guardagent check --consent FILE` and the guard service (`consent` in a trace request, what
`check --server --consent FILE` sends) refuse the same records with the same words: a
deployment without a key takes no records at all, as it cannot tell whose they are.
"""

from __future__ import annotations

from typing import Any

NEEDS_KEY = (
    "consent records need the deployment's key, which signs them: set "
    "GUARDAGENT_TRACE_KEY (e.g. export GUARDAGENT_TRACE_KEY=$(openssl rand -hex 32), "
    "the same key for every call of the deployment)"
)


def consent_problem(records: Any, key: bytes | None) -> str | None:
    """Why `records` cannot be taken as the host's consent records; None when they can.

    Args:
        records: What the host sent (a JSON value).
        key: The deployment's trace key (None: no key is set).
    """
    from guardagent.trace.predicates import Consent, PredicateSpecError
    from guardagent.trace.thread.state import verify

    if not isinstance(records, list):
        return f"a JSON list of consent records, not {type(records).__name__}"
    if key is None:
        return NEEDS_KEY
    for number, record in enumerate(records, 1):
        try:
            Consent.from_json(record)
        except (PredicateSpecError, TypeError, RecursionError) as exc:
            return f"record {number}: {str(exc)[:200]}"
        if not verify(record, key):
            return (
                f"record {number} is not signed with GUARDAGENT_TRACE_KEY (sign records "
                "with guardagent.trace.Consent(...).signed(key))"
            )
    return None
