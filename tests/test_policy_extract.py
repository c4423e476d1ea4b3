"""Policy extraction (issue 13): documents -> sections with stable references -> a policy
model whose every rule cites its verbatim source, with model answers validated, retried and
reported; a model that contradicts itself is caught by z3."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from guardagent.authoring.cli import policy
from guardagent.authoring.documents import normalize_space, read_document
from guardagent.authoring.extract import extract_policy
from guardagent.policy.model import load_policy
from tests.scripted import ScriptedChatModel

EXAMPLES = Path(__file__).resolve().parent.parent / "guardagent" / "policies" / "examples"
DOC = EXAMPLES / "support-agent-policy.md"
ANSWERS = json.loads((EXAMPLES / "support-agent-policy.answers.json").read_text())


def _doc(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- documents


def test_markdown_sections_have_stable_references(tmp_path: Path) -> None:
    doc = _doc(
        tmp_path,
        "h.md",
        "# Handbook\n\nIntro.\n\n## Refunds\n\nFirst rule\nwraps.\n\n"
        "- bullet one\n- bullet two\n\n### Large\n\nBig ones.\n",
    )
    sections = read_document(doc)
    refs = [p.ref for s in sections for p in s.paragraphs]
    assert refs == [
        "h.md#top:p1",
        "h.md#refunds:p1",
        "h.md#refunds:p2",
        "h.md#refunds:p3",
        "h.md#refunds/large:p1",
    ]
    assert sections[1].paragraphs[0].text == "First rule wraps."
    assert sections[2].title == "Refunds > Large"
    # Editing another section leaves these references unchanged.
    doc.write_text(doc.read_text().replace("Intro.", "Intro.\n\nMore intro."))
    again = [p.ref for s in read_document(doc) for p in s.paragraphs]
    assert "h.md#refunds/large:p1" in again and "h.md#top:p2" in again


def test_html_and_text_documents(tmp_path: Path) -> None:
    html = _doc(
        tmp_path,
        "p.html",
        "<html><head><title>x</title><style>p{}</style></head>"
        "<body><h1>Policy</h1><h2>Email</h2><p>Send only to the address"
        " on record.</p><ul><li>No card numbers.</li></ul><script>evil()</script>"
        "</body></html>",
    )
    sections = read_document(html)
    assert [(p.ref, p.text) for s in sections for p in s.paragraphs] == [
        ("p.html#email:p1", "Send only to the address on record."),
        ("p.html#email:p2", "No card numbers."),
    ]
    text = _doc(tmp_path, "t.txt", "Rule one.\n\nRule\ntwo.\n")
    assert [p.text for s in read_document(text) for p in s.paragraphs] == ["Rule one.", "Rule two."]


def test_pdf_document(tmp_path: Path) -> None:
    pytest.importorskip("pypdf")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    fig.text(0.1, 0.5, "Exports must be encrypted.")
    pdf = tmp_path / "policy.pdf"
    fig.savefig(pdf)
    plt.close(fig)
    sections = read_document(pdf)
    assert sections[0].ref == "policy.pdf#page-1"
    assert "Exports must be encrypted." in sections[0].paragraphs[0].text


# --------------------------------------------------------------------------- extraction


def _in_order() -> list[str]:
    """The recorded answers, in the order extraction asks (one per section)."""
    return [json.dumps(ANSWERS["extract"][s.ref]) for s in read_document(DOC)]


def test_extract_example_with_scripted_model() -> None:
    chat = ScriptedChatModel.of(_in_order())
    result = extract_policy([DOC], chat, progress=False)
    assert result.ok, (result.failed, result.check and result.check.findings)
    model = result.model
    assert model is not None and model.approved_only
    assert len(model.rules) == 16 and len(model.predicates) == 20
    doc_text = normalize_space(DOC.read_text())
    for rule in model.rules:
        assert rule.review == "proposed"
        assert rule.source.startswith("support-agent-policy.md#") and ":p" in rule.source
        assert rule.span and rule.span in doc_text  # the document's own words
    # The prompt of a later section lists the predicates earlier sections declared.
    last = chat.prompts[-3][1].content
    assert "* refund (action)" in str(last)


def test_malformed_output_is_retried_with_the_error(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "p.md", "## Export\n\nExports must be encrypted.\n")
    good = {
        "policies": [
            {
                "definition": "Exports are encrypted.",
                "text": "Exports must be encrypted.",
                "reference": "[export:p1]",  # file part left out
                "predicates": [
                    {"name": "export_data", "kind": "action"},
                    {"name": "encrypted", "kind": "condition"},
                ],
                "rules": [{"logic": "export_data IMPLIES encrypted"}],
            }
        ]
    }
    invented = json.loads(json.dumps(good))
    invented["policies"][0]["text"] = "Exports should probably be encrypted."
    chat = ScriptedChatModel.of(
        ["Sure! Here are the policies.", json.dumps(invented), f"```json\n{json.dumps(good)}\n```"]
    )
    result = extract_policy([doc], chat, progress=False)
    assert result.ok and result.sections[0].attempts == 3
    retry1, retry2 = str(chat.prompts[1][-1].content), str(chat.prompts[2][-1].content)
    assert "no JSON object" in retry1
    assert "not a verbatim span" in retry2
    assert result.model is not None and result.model.rules[0].span == "Exports must be encrypted."
    assert result.model.rules[0].source == "p.md#export:p1"


def test_output_that_stays_invalid_is_reported_not_dropped(tmp_path: Path) -> None:
    doc = _doc(
        tmp_path, "p.md", "## Export\n\nExports must be encrypted.\n\n## Email\n\nNothing here.\n"
    )
    bad = {
        "policies": [
            {
                "definition": "d",
                "text": "Exports must be encrypted.",
                "reference": "p.md#export:p1",
                "predicates": [],
                "rules": [{"logic": "export_data IMPLIES AND encrypted"}],
            }
        ]
    }
    chat = ScriptedChatModel.of([json.dumps(bad)] * 3 + ['{"policies": []}'])
    result = extract_policy([doc], chat, progress=False)
    assert not result.ok
    [failed] = result.failed
    assert failed.ref == "p.md#export" and failed.attempts == 3
    assert any("logic" in e for e in failed.errors)
    assert result.to_json()["failed_sections"] == ["p.md#export"]


def test_self_contradicting_model_is_caught_by_z3(tmp_path: Path) -> None:
    doc = _doc(
        tmp_path,
        "p.md",
        "## Logging\n\nAudit logging is always on.\n\n## Costs\n\n"
        "Audit logging is switched off to save costs.\n",
    )

    def answer(ref: str, text: str, logic: str) -> str:
        return json.dumps(
            {
                "policies": [
                    {
                        "definition": text,
                        "text": text,
                        "reference": ref,
                        "predicates": [{"name": "audit_logging", "kind": "condition"}],
                        "rules": [{"logic": logic}],
                    }
                ]
            }
        )

    chat = ScriptedChatModel.of(
        [
            answer("p.md#logging:p1", "Audit logging is always on.", "audit_logging"),
            answer(
                "p.md#costs:p1", "Audit logging is switched off to save costs.", "NOT audit_logging"
            ),
        ]
    )
    result = extract_policy([doc], chat, progress=False)
    assert not result.failed and result.check is not None and not result.check.ok
    [unsat] = [f for f in result.check.findings if f.code == "unsat_hard_rules"]
    assert set(unsat.rules) == {"logging-p1-1", "costs-p1-1"}


def test_kind_conflict_across_sections_is_sent_back(tmp_path: Path) -> None:
    doc = _doc(tmp_path, "p.md", "## A\n\nRefunds need approval.\n\n## B\n\nRefunds are logged.\n")
    first = {
        "policies": [
            {
                "definition": "x",
                "text": "Refunds need approval.",
                "reference": "p.md#a:p1",
                "predicates": [
                    {"name": "refund", "kind": "action"},
                    {"name": "approval", "kind": "condition"},
                ],
                "rules": [{"logic": "refund IMPLIES approval"}],
            }
        ]
    }
    clash = {
        "policies": [
            {
                "definition": "y",
                "text": "Refunds are logged.",
                "reference": "p.md#b:p1",
                "predicates": [
                    {"name": "refund", "kind": "condition"},
                    {"name": "logged", "kind": "condition"},
                ],
                "rules": [{"logic": "refund IMPLIES logged"}],
            }
        ]
    }
    fixed = json.loads(json.dumps(clash))
    fixed["policies"][0]["predicates"][0]["kind"] = "action"
    chat = ScriptedChatModel.of([json.dumps(first), json.dumps(clash), json.dumps(fixed)])
    result = extract_policy([doc], chat, progress=False)
    assert result.ok and result.sections[1].attempts == 2
    assert "already declared as action" in str(chat.prompts[2][-1].content)


# --------------------------------------------------------------------------- the command


def test_extract_without_a_model_says_how_to_configure_one(tmp_path: Path) -> None:
    for args in ([], ["--model", "offline"]):
        result = CliRunner().invoke(
            policy, ["extract", str(DOC), "--out", str(tmp_path / "p.yaml"), *args]
        )
        assert result.exit_code == 2
        assert "needs a chat model" in result.output
        assert "--model openai:gpt-4o" in result.output and "OPENAI_API_KEY" in result.output
        assert "--base-url" in result.output
        assert not (tmp_path / "p.yaml").exists()


def test_extract_command_with_recorded_answers(tmp_path: Path) -> None:
    out = tmp_path / "policy.yaml"
    result = CliRunner().invoke(
        policy,
        [
            "extract",
            str(DOC),
            "--model",
            f"replay:{EXAMPLES / 'support-agent-policy.answers.json'}",
            "--out",
            str(out),
            "--no-progress",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "20 predicates, 16 rules from 9 sections" in result.output
    report: dict[str, Any] = json.loads((tmp_path / "policy.yaml.report.json").read_text())
    assert report["ok"] and report["failed_sections"] == []
    assert len(load_policy(out).rules) == 16
    check = CliRunner().invoke(policy, ["check", str(out)])
    assert check.exit_code == 0, check.output
