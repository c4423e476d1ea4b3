"""An approved value and a call pattern's value are compared with every character a tool reads.

A host review that approved ``delete_file(path="notes.txt")`` approved that file, not
``../notes.txt`` or ``notes.*`` (the same words); one that approved CHF 1.5 did not approve
the text ``1,500``, which a bank may read as 1500. A call pattern compares the same way,
and when the looser reading (words, any reading of an amount) gives another answer the
predicate is open: a rule that needs it either way denies.
"""

from __future__ import annotations

from typing import Any

import pytest

from guardagent.trace import Consent, parse_trace
from tests.trace_helpers import LABELS, call, result, system, user
from tests.trace_helpers import twin_analyze as analyze


def _consent(proposed: dict[str, Any], values: dict[str, Any]) -> Any:
    messages = [system(), user("Tidy up my folder.")]
    record = Consent(proposed["name"], "approve", values=values, thread="t")
    facts = analyze(parse_trace(messages, proposed), LABELS, consent=[record], thread="t")
    return facts.fact("consent_given()").value


@pytest.mark.parametrize("path", ["../notes.txt", "/notes.txt", "notes.*", "notes", "notes-txt"])
def test_a_review_that_approved_a_file_does_not_approve_another_spelling(path: str) -> None:
    approved = {"path": "notes.txt"}
    assert _consent({"name": "delete_file", "args": {"path": "notes.txt"}}, approved) is True
    assert _consent({"name": "delete_file", "args": {"path": "NOTES.TXT "}}, approved) is True
    assert _consent({"name": "delete_file", "args": {"path": path}}, approved) is False


def test_a_review_that_approved_an_amount_does_not_approve_a_text_read_two_ways() -> None:
    pay = {"name": "send_money", "args": {"iban": "CH9300762011623852957", "amount": "1,500"}}
    assert _consent(pay, {"amount": 1.5}) is False
    assert _consent(pay, {"amount": 1500}) is False
    exact = {"name": "send_money", "args": {"iban": "CH9300762011623852957", "amount": 1500}}
    assert _consent(exact, {"amount": "1,500.00"}) is True


def _history(earlier: str) -> Any:
    messages = [
        system(),
        user("Read my files."),
        call("1", "read_file", {"path": earlier}),
        result("1", "..."),
    ]
    return analyze(
        parse_trace(messages, {"name": "browse", "args": {"url": "https://x.ch"}}), LABELS
    )


@pytest.mark.parametrize("earlier", ["./secrets.txt", "secrets-txt", "secrets.txt~", "SECRETS txt"])
def test_a_call_pattern_on_another_spelling_is_open(earlier: str) -> None:
    f = _history(earlier)
    fact = f.fact('called_before("read_file", args={"path": "secrets.txt"})')
    assert fact.value is None, fact.detail
    assert (
        _history("secrets.txt")
        .fact('called_before("read_file", args={"path": "secrets.txt"})')
        .value
        is True
    )
    for other in ("notes.txt", "/srv/secrets.txt"):  # other words: another file, as before
        assert (
            _history(other).fact('called_before("read_file", args={"path": "secrets.txt"})').value
            is False
        )
