"""Trace facts say which argument values they judged and the chain each came by.

A picture of a decision (:mod:`guardagent.explain`) draws, for a provenance predicate, the
user message that asked for a document, the tool result holding the value, the value and the
predicate. The decision must therefore carry that chain as data (``trace_facts[name]
["values"]``), not only as the `detail` sentence: a reader must not parse our prose.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from guardagent.agent import GuardAgent
from guardagent.explain import draw, read_decision, to_svg

EXAMPLES = Path(__file__).parents[1] / "guardagent" / "policies" / "examples"
PAY = EXAMPLES / "pay-invoice"
SHIPPED = [
    (p.parents[1], p)
    for p in sorted(EXAMPLES.glob("*/traces/*.json"))
    if (p.parents[1] / "profile.yaml").is_file()
]


@pytest.fixture(scope="module")
def guards() -> dict[Path, GuardAgent]:
    return {root: GuardAgent(profile=str(root)) for root in {r for r, _ in SHIPPED}}


def _facts(guard: GuardAgent, path: Path) -> dict[str, Any]:
    decision = guard.check_trace(path.read_bytes()).model_dump(mode="json")
    return decision


def test_a_designated_payee_carries_the_user_request_then_the_file_read(
    guards: dict[Path, GuardAgent],
) -> None:
    decision = _facts(guards[PAY], PAY / "traces" / "b01_invoice_named_file.json")
    fact = decision["trace_facts"]["payee_from_named_file"]
    assert fact["value"] is True
    (value,) = fact["values"]
    assert value["path"] == "iban" and value["value"].startswith("ch44")
    user, result = value["chain"]
    assert (user["kind"], result["kind"]) == ("user", "untrusted_tool")
    assert user["index"] < result["index"]
    assert "invoice-0425.txt" in user["note"]  # the user's own words that asked for it
    assert "read_file" in result["note"] and "invoice-0425.txt" in result["note"]


def test_an_injected_payee_carries_only_the_untrusted_message(
    guards: dict[Path, GuardAgent],
) -> None:
    decision = _facts(guards[PAY], PAY / "traces" / "i01_injected_iban_in_inbox.json")
    for name in ("recipient_known", "payee_from_named_file"):
        fact = decision["trace_facts"][name]
        (value,) = fact["values"]
        assert value["origin"] == "untrusted", value
        assert [(s["kind"], s["source"]) for s in value["chain"]] == [
            ("untrusted_tool", "tool:read_inbox")
        ]


@pytest.mark.parametrize(("root", "path"), SHIPPED, ids=[f"{r.name}/{p.stem}" for r, p in SHIPPED])
def test_every_value_chain_is_made_of_the_facts_own_messages(
    guards: dict[Path, GuardAgent], root: Path, path: Path
) -> None:
    """Over every shipped example trace: a chain names only messages the fact names, in order,
    and every provenance predicate that names messages names the values too."""
    decision = _facts(guards[root], path)
    for name, fact in (decision["trace_facts"] or {}).items():
        indexes = {s["index"] for s in fact["sources"]}
        for value in fact.get("values", []):
            chain = [s["index"] for s in value["chain"]]
            assert set(chain) <= indexes, (name, value, fact["sources"])
            assert chain == sorted(chain), (name, value)
        if (
            fact["name"].startswith(("arg_from_trusted", "arg_from_designated"))
            and (fact["sources"])
        ):
            assert fact.get("values"), (name, fact)
    # the picture draws every such chain without breaking
    view = read_decision(json.dumps(decision).encode())
    assert to_svg(draw(view)).startswith("<svg")


def test_the_picture_draws_user_then_file_then_value_then_predicate(
    guards: dict[Path, GuardAgent],
) -> None:
    import xml.etree.ElementTree as ET

    decision = _facts(guards[PAY], PAY / "traces" / "b01_invoice_named_file.json")
    svg = ET.fromstring(to_svg(draw(read_decision(json.dumps(decision).encode()))))
    ns = "{http://www.w3.org/2000/svg}"
    kinds = {g.get("id"): g.get("data-kind") for g in svg.iter(f"{ns}g")}
    edges = {
        (p.get("data-from"), p.get("data-to"))
        for p in svg.iter(f"{ns}path")
        if p.get("class") == "edge"
    }
    user = "m1"
    read = next(b for a, b in edges if a == user and kinds[b] == "message")
    value = next(b for a, b in edges if a == read and kinds[b] == "value")
    assert any(a == value and kinds[b] == "predicate" for a, b in edges)
    said = {
        g.get("id"): " ".join(t.text or "" for t in g.iter(f"{ns}text")) for g in svg.iter(f"{ns}g")
    }
    assert "asked:" in said[user] and "invoice-0425.txt" in said[user], said[user]
    assert "result of read_file" in said[read], said[read]


@pytest.mark.parametrize(
    ("text", "name", "shown"),
    [
        (
            "Please pay the invoice in invoice-0425.txt today, thanks a lot for that",
            "invoice-0425.txt",
            "...pay the invoice in invoice-0425.txt today, thanks a lot...",
        ),
        ("pay invoice-0425.txt", "invoice-0425.txt", "pay invoice-0425.txt"),
        ("invoice-0425.txt", "invoice-0425.txt", "invoice-0425.txt"),
        (
            "x" * 40 + "/invoice-0425.txt" + "y" * 40,
            "invoice-0425.txt",
            "..." + "x" * 23 + "/invoice-0425.txt" + "y" * 24 + "...",
        ),
        (
            "open  the\\nfile\\tinvoice-0425.txt\\n\\nnow",
            "invoice-0425.txt",
            "open the\\nfile\\tinvoice-0425.txt\\n\\nnow",
        ),
    ],
)
def test_the_words_around_a_name_are_whole_words_and_keep_the_name(
    text: str, name: str, shown: str
) -> None:
    from guardagent.trace.predicates.trails import _around

    start = text.index(name)
    words = _around(text, start, start + len(name))
    assert name in words
    assert words == shown


# -- the document predicates carry their trails too ------------------------------------------

_DOCS = [
    'arg_designated_unaddressed("iban", via="read_file")',
    'arg_designated_unique("iban", via="read_file")',
]


@pytest.mark.parametrize("expression", _DOCS)
def test_a_document_predicate_names_the_request_and_the_document(expression: str) -> None:
    from tests.test_trace_document import BILL, IBAN, _pay

    fact = _pay(BILL, IBAN).fact(expression)
    assert fact.value is True
    (value,) = fact.values
    assert value.path == "iban" and value.origin == "designated"
    assert [(s.ref.index, s.ref.kind) for s in value.chain] == [(1, "user"), (3, "untrusted_tool")]
    assert "invoice-0425.txt" in value.chain[0].note
    assert "read_file" in value.chain[1].note


@pytest.mark.parametrize("expression", _DOCS)
def test_a_document_predicate_that_fails_names_the_value_and_where_it_is(expression: str) -> None:
    from tests.test_trace_document import ATTACKER, BILL, INJECTIONS, _pay

    document = BILL + "\n\n" + INJECTIONS[0].format(iban=ATTACKER)
    fact = _pay(document, ATTACKER, 0.01).fact(expression)
    assert fact.value is False
    assert fact.values and all(v.path == "iban" for v in fact.values)
    assert {s.ref.index for v in fact.values for s in v.chain} <= {s.index for s in fact.sources}
