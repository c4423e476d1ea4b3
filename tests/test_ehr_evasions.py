"""No output of the evasion corpus gets past the eicu-ac guard (reader and sandboxed program)."""

from __future__ import annotations

import pytest

from guardagent import GuardAgent
from guardagent.readers.ehragent import ehr_accessed_columns
from guardagent.readers.evidence import UnreadableEvidence
from guardagent.tools.rules import check_access
from tests.corpus.ehr_evasions import EVASIONS
from tests.guards import MakeGuard

ADMIN = "Identity: general administration\nQuestion: what was the last bun value of patient 1?"
PERMISSIONS = {
    "cost": [
        "uniquepid",
        "patienthealthsystemstayid",
        "eventtype",
        "eventid",
        "chargetime",
        "cost",
    ],
    "lab": ["patientunitstayid", "labresulttime"],
}


def test_the_corpus_is_large_enough() -> None:
    assert len(EVASIONS) >= 40


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_reader_denies(name: str) -> None:
    try:
        accessed = ehr_accessed_columns(EVASIONS[name])
    except UnreadableEvidence:
        return
    assert check_access(accessed, PERMISSIONS), (name, accessed)


@pytest.fixture(scope="module")
def guard(make_guard: MakeGuard) -> GuardAgent:
    return make_guard("eicu-ac", own_memory=True)


@pytest.mark.parametrize("name", sorted(EVASIONS))
def test_guard_denies(name: str, guard: GuardAgent) -> None:
    decision = guard.check(ADMIN, EVASIONS[name])
    assert decision.allowed is False, (name, decision.reason)
    assert decision.program_source == "memory"
    assert decision.unreadable or decision.violations, decision.reason
