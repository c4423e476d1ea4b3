"""The example trace policies rewritten with the issue 20 predicates, on their new traces.

The assistant pays an IBAN found only in a file the user named (derived from the user),
up to its limit; above it the denial names the limit rule and the chain. The browser agent
needs approval for a delete button (an argument predicate on the element's name), and only
two failures *in a row* stop it (a sequence), not two failures anywhere in a long run.
"""

from __future__ import annotations

import json
from pathlib import Path

from guardagent.agent import GuardAgent

TRACES = Path(__file__).parent / "traces"


def test_the_assistant_pays_a_named_invoice_up_to_the_limit_and_names_the_chain() -> None:
    guard = GuardAgent(profile="assistant-trace")
    small = json.loads((TRACES / "b08_invoice_named_file_openai.json").read_text())
    allowed = guard.check_trace(small)
    assert allowed.allowed, allowed.reason
    large = json.loads((TRACES / "i09_named_file_over_limit_openai.json").read_text())
    denied = guard.check_trace(large, rules="applied")
    assert not denied.allowed
    assert [r.id for r in denied.rules if r.status == "violated"] == ["named-document-amount-limit"]
    assert (
        "from `read_file` of `invoices/printwerk-0425.pdf`, which the user named in message 1"
        in denied.reason
    )
    assert denied.violations and "CHF 1,000" in denied.violations[0]
