"""Pictures of a decision (issue 37 item 6): the provenance chain and the rule circuit.

A decision's JSON (as `guardagent check` prints it) is drawn as one layered graph: the
messages its trace facts name -> the predicates -> the rules -> the verdict, the deciding
values marked. The drawing is checked by its structure (the SVG parsed with xml.etree, the
Mermaid read line by line), never by pixels; and since decision text is attacker-influenced
(a tool result's value, a tool's name), arbitrary text must never break either format.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardagent.agent import GuardAgent
from guardagent.cli import main
from guardagent.exit_status import OK, UNREADABLE
from guardagent.explain import DecisionView, draw, read_decision, to_mermaid, to_svg

EXAMPLE = Path(__file__).parents[1] / "guardagent" / "policies" / "examples" / "pay-invoice"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def decisions() -> dict[str, dict[str, Any]]:
    """Real decisions of the shipped pay-invoice traces, as `check --trace` prints them."""
    guard = GuardAgent(profile=str(EXAMPLE))
    out = {}
    for name in ("i01_injected_iban_in_inbox", "b01_invoice_named_file"):
        raw = (EXAMPLE / "traces" / f"{name}.json").read_bytes()
        out[name] = guard.check_trace(raw).model_dump(mode="json")
    return out


def _svg_graph(svg: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, str]]]:
    """(node id -> {kind, text, marked}, [(from, to, marked)]) read back from the SVG."""
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    nodes = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class", "").startswith("node"):
            text = " ".join("".join(t.itertext()) for t in g.iter(f"{SVG}text"))
            nodes[g.get("id", "")] = {
                "kind": g.get("data-kind", ""),
                "text": text,
                "marked": g.get("data-marked", ""),
            }
    edges = [
        (p.get("data-from", ""), p.get("data-to", ""), p.get("data-marked", ""))
        for p in root.iter(f"{SVG}path")
        if p.get("class", "").startswith("edge")
    ]
    return nodes, edges


def _marked_path(edges: list[tuple[str, str, str]], start: str, end: str) -> bool:
    """A path of marked edges leads from `start` to `end`."""
    reached, todo = {start}, [start]
    while todo:
        here = todo.pop()
        for a, b, marked in edges:
            if a == here and marked == "true" and b not in reached:
                reached.add(b)
                todo.append(b)
    return end in reached


def _by_text(nodes: dict[str, dict[str, str]], kind: str, words: str) -> str:
    found = [n for n, v in nodes.items() if v["kind"] == kind and words in v["text"]]
    assert len(found) == 1, (kind, words, nodes)
    return found[0]


# -- golden structure, from real decisions --------------------------------------------------


def test_denial_svg_draws_the_chain_from_the_untrusted_message_to_the_verdict(
    decisions: dict[str, dict[str, Any]],
) -> None:
    view = read_decision(json.dumps(decisions["i01_injected_iban_in_inbox"]).encode())
    nodes, edges = _svg_graph(to_svg(draw(view)))
    verdict = _by_text(nodes, "verdict", "DENIED")
    rule = _by_text(nodes, "rule", "money-to-known-payee")
    known = _by_text(nodes, "predicate", "recipient_known")
    inbox = _by_text(nodes, "message", "read_inbox")
    assert (rule, verdict, "true") in edges
    assert (known, rule, "true") in edges
    assert _marked_path(edges, inbox, known)  # through the value it holds
    assert nodes[rule]["marked"] == nodes[known]["marked"] == "true"
    assert "violated" in nodes[rule]["text"] and "false" in nodes[known]["text"]
    # a rule that holds is drawn, unmarked; a rule of another action is not drawn at all
    holds = _by_text(nodes, "rule", "few-transfers")
    assert (holds, verdict, "") in edges and nodes[holds]["marked"] == ""
    assert not [n for n, v in nodes.items() if "data-to-known-recipient" in v["text"]]
    # every edge joins drawn nodes, and goes from a node to a later layer
    assert {e[0] for e in edges} | {e[1] for e in edges} <= set(nodes)


def test_allowed_svg_draws_the_user_message_that_named_the_file(
    decisions: dict[str, dict[str, Any]],
) -> None:
    view = read_decision(json.dumps(decisions["b01_invoice_named_file"]).encode())
    nodes, edges = _svg_graph(to_svg(draw(view)))
    verdict = _by_text(nodes, "verdict", "ALLOWED")
    named = _by_text(nodes, "predicate", "payee_from_named_file")
    user = _by_text(nodes, "message", "message 1")
    assert nodes[user]["text"].count("user") >= 1
    assert _marked_path(edges, user, named)
    assert any(e[1] == verdict for e in edges)


def test_mermaid_of_a_denial_has_every_node_and_thick_deciding_edges(
    decisions: dict[str, dict[str, Any]],
) -> None:
    view = read_decision(json.dumps(decisions["i01_injected_iban_in_inbox"]).encode())
    diagram = draw(view)
    text = to_mermaid(diagram)
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    for node in diagram.nodes:
        assert any(
            line.strip().startswith(node.id + "[")
            or line.strip().startswith(node.id + "(")
            or line.strip().startswith(node.id + "{")
            for line in lines
        ), node
    thick = [line for line in lines if "==>" in line]
    assert len(thick) == sum(e.marked for e in diagram.edges) >= 3
    assert _mermaid_ok(text)


# -- attacker text never breaks the formats -------------------------------------------------

_EDGE = re.compile(r"^    ([a-z][a-z0-9_]*) (-->|==>)(\|\"[^\"]*\"\|)? ([a-z][a-z0-9_]*)$")
_NODE = re.compile(r'^    ([a-z][a-z0-9_]*)(\["|\(\["|\{\{"|\(\(")([^"]*)("\]|"\]\)|"\}\}|"\)\))$')
_CLASS = re.compile(r"^    (classDef [a-z_]+ [a-z0-9:#,.\- ]+|class [a-z0-9_,]+ [a-z_]+)$")


def _mermaid_ok(text: str) -> bool:
    """Every line is one of the statement forms the renderer emits (a test-side checker)."""
    lines = text.splitlines()
    if lines[0] != "flowchart LR":
        return False
    for line in lines[1:]:
        node = _NODE.match(line)
        if node:
            label = node.group(3)
            opener, closer = node.group(2), node.group(4)
            shapes = {'["': '"]', '(["': '"])', '{{"': '"}}', '(("': '"))'}
            if shapes[opener] != closer or not _label_ok(label):
                return False
        elif _EDGE.match(line):
            label = _EDGE.match(line).group(3)  # type: ignore[union-attr]
            if label and not _label_ok(label[2:-2]):
                return False
        elif not _CLASS.match(line):
            return False
    return True


def _label_ok(label: str) -> bool:
    """Only safe characters, entity codes and the renderer's own line breaks."""
    return re.fullmatch(r"(?:[A-Za-z0-9 .,:_/@=+?!'()-]|#[0-9]+;|<br/>)*", label) is not None


def _decode(label: str) -> str:
    return html.unescape(re.sub(r"#([0-9]+);", r"&#\1;", label))


_TEXT = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from(
    [
        "</text><script>alert(1)</script>",
        '"] --> x["pwned',
        "a\n%%{init: {}}%%\nb",
        "]]><!--",
        "x --> y",
        "end",
        "click r0 call alert()",
        "\x00\x01\x1b\ufffe",
        "classDef x fill:red",
        "|x|",
        "&amp;",
        "#35;",
        "{{ }}",
        "\ud800",
    ]
)


def _decision(name: str, detail: str, source: str, rule_id: str, policy: str) -> dict[str, Any]:
    return {
        "allowed": False,
        "label": 1,
        "reason": detail,
        "violations": [policy],
        "rules": [
            {
                "id": rule_id,
                "status": "violated",
                "hard": True,
                "logic": "pays IMPLIES recipient_known",
                "policy": policy,
                "deciding": {"pays": True, "recipient_known": False},
            }
        ],
        "safety_probability": 0.0,
        "trace_facts": {
            "pays": {"name": f"tool_is({name!r})", "value": True, "detail": detail, "sources": []},
            "recipient_known": {
                "name": "arg_from_trusted('to')",
                "value": False,
                "detail": detail,
                "sources": [{"index": 3, "source": source, "kind": "untrusted_tool"}],
            },
        },
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=_TEXT, detail=_TEXT, source=_TEXT, rule_id=_TEXT, policy=_TEXT)
def test_arbitrary_text_never_breaks_svg_or_mermaid(
    name: str, detail: str, source: str, rule_id: str, policy: str
) -> None:
    doc = _decision(name, detail, source, rule_id, policy)
    view = read_decision(json.dumps(doc).encode())
    diagram = draw(view)
    svg = to_svg(diagram)
    nodes, edges = _svg_graph(svg)  # parses: well-formed XML
    root = ET.fromstring(svg)
    assert not [e for e in root.iter() if e.tag.split("}")[-1] in ("script", "foreignObject")]
    assert {n.id for n in diagram.nodes} == set(nodes)
    assert len(edges) == len(diagram.edges)
    text = to_mermaid(diagram)
    assert _mermaid_ok(text), text
    styles = [line for line in text.splitlines() if line.startswith("    class")]
    assert len(text.splitlines()) == 1 + len(diagram.nodes) + len(diagram.edges) + len(styles)


_INDEX = st.integers(min_value=-3, max_value=12)
_LINK = st.fixed_dictionaries(
    {
        "index": _INDEX,
        "source": _TEXT,
        "kind": st.sampled_from(
            ["user", "system", "model", "trusted_tool", "untrusted_tool", "other"]
        ),
        "note": _TEXT,
    }
)
_VALUE = st.fixed_dictionaries(
    {"path": _TEXT, "value": _TEXT, "origin": _TEXT, "chain": st.lists(_LINK, max_size=4)}
)
_NAMES = st.sampled_from(["a", "b", "c", "d"])
_FACT = st.fixed_dictionaries(
    {
        "name": _TEXT,
        "value": st.sampled_from([True, False, None]),
        "detail": _TEXT,
        "sources": st.lists(_LINK, max_size=10),
        "values": st.lists(_VALUE, max_size=6),
    }
)
_RULE = st.fixed_dictionaries(
    {
        "id": _TEXT,
        "status": st.sampled_from(["holds", "violated", "possibly_violated", "not_applicable"]),
        "hard": st.booleans(),
        "policy": _TEXT,
        "logic": st.sampled_from(
            [
                "a IMPLIES b",
                "(a AND c) IMPLIES NOT d",
                "a OR",
                "",
                "x" * 5000,
                "a IMPLIES (b OR c OR d)",
            ]
        ),
        "deciding": st.dictionaries(_NAMES, st.booleans()),
        "open": st.lists(_NAMES, max_size=2),
        "witness": st.dictionaries(_NAMES, st.booleans()),
    }
)
_DECISION = st.fixed_dictionaries(
    {
        "allowed": st.booleans(),
        "reason": _TEXT,
        "rules": st.lists(_RULE, max_size=5),
        "safety_probability": st.none() | st.floats(0, 1),
        "trace_facts": st.none() | st.dictionaries(_NAMES | _TEXT, _FACT, max_size=5),
        "unreadable": st.lists(
            st.fixed_dictionaries({"reason": _TEXT, "detail": _TEXT}), max_size=2
        ),
    }
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_DECISION)
def test_any_decision_draws_as_a_forward_graph_in_both_formats(doc: dict[str, Any]) -> None:
    """Whatever a decision file holds (chains that loop, unknown kinds, logic that does not
    parse), the picture is a left-to-right DAG of its own nodes, in valid SVG and Mermaid."""
    diagram = draw(read_decision(json.dumps(doc).encode()))
    ids = [n.id for n in diagram.nodes]
    assert len(ids) == len(set(ids))
    column = {n.id: c for c, col in enumerate(diagram.columns()) for n in col}
    assert set(column) == set(ids)
    assert all(column[e.source] < column[e.target] for e in diagram.edges)
    nodes, edges = _svg_graph(to_svg(diagram))
    assert set(nodes) == set(ids) and len(edges) == len(diagram.edges)
    assert _mermaid_ok(to_mermaid(diagram))
    verdict = [n for n in diagram.nodes if n.kind == "verdict"]
    assert len(verdict) == 1 and verdict[0].lines[0] == ("ALLOWED" if doc["allowed"] else "DENIED")


@settings(max_examples=100, deadline=None)
@given(text=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40))
def test_a_mermaid_label_decodes_back_to_the_text(text: str) -> None:
    from guardagent.explain.diagram import visible
    from guardagent.explain.mermaid import label

    encoded = label([text])
    assert _label_ok(encoded)
    assert _decode(encoded) == visible(text)
    assert len(visible(text)) == len(" ".join(text.split()))


@pytest.mark.parametrize(
    "hidden", ["\u202e", "\u200b", "\x1b", "\x00", "\u2066", "\ufeff", "\U000e0041", "\x85"]
)
def test_invisible_characters_show_as_a_replacement_mark(hidden: str) -> None:
    """A bidi override or a zero-width space in a value must not hide what a label says."""
    doc = _decision("n", f"txt{hidden}.exe", "s", "r", "p")
    diagram = draw(read_decision(json.dumps(doc).encode()))
    shown = [line for n in diagram.nodes for line in n.lines if "txt" in line]
    assert shown and all(
        hidden not in line and "\ufffd" in line or hidden.isspace() for line in shown
    ), shown
    nodes, _ = _svg_graph(to_svg(diagram))
    assert all(hidden not in v["text"] for v in nodes.values())
    assert hidden not in _decode(to_mermaid(diagram))


# -- reading a decision file: fail closed, one line -----------------------------------------


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "not JSON"),
        (b"[{", "not JSON"),
        (b"[1, 2]", "not a decision"),
        (b'{"label": 1}', "allowed"),
        (b'{"allowed": "no"}', "allowed"),
        (b'{"allowed": false, "rules": [{"id": 3}]}', "rules"),
        (b'{"allowed": false, "trace_facts": {"x": {"value": "yes"}}}', "trace_facts"),
        (b"\xff\xfe\x00", "not JSON"),
        (b"[" * 100_000, "not JSON"),
    ],
)
def test_what_is_not_a_decision_is_refused_with_one_line(data: bytes, words: str) -> None:
    from guardagent.explain import UnreadableDecision

    with pytest.raises(UnreadableDecision) as caught:
        read_decision(data)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_decision_without_rules_or_facts_still_draws_its_verdict_and_reason() -> None:
    view = read_decision(
        b'{"allowed": false, "label": 1, "reason": "no program ran",'
        b' "unreadable": [{"reason": "unparsable_trace", "detail": "x"}]}'
    )
    nodes, _ = _svg_graph(to_svg(draw(view)))
    verdict = _by_text(nodes, "verdict", "DENIED")
    assert "unparsable_trace" in nodes[verdict]["text"]
    assert isinstance(view, DecisionView)


# -- the CLI ------------------------------------------------------------------------------


def test_cli_explain_writes_svg_and_mermaid(
    tmp_path: Path, decisions: dict[str, dict[str, Any]]
) -> None:
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(decisions["i01_injected_iban_in_inbox"]), encoding="utf-8")
    runner = CliRunner()
    shown = runner.invoke(main, ["explain", str(path), "-o", str(tmp_path / "d.svg")])
    assert shown.exit_code == OK, shown.output
    nodes, _ = _svg_graph((tmp_path / "d.svg").read_text(encoding="utf-8"))
    assert _by_text(nodes, "verdict", "DENIED")
    shown = runner.invoke(main, ["explain", str(path), "--format", "mermaid"])
    assert shown.exit_code == OK and _mermaid_ok(shown.stdout.rstrip("\n")), shown.output
    shown = runner.invoke(main, ["explain", "-", "--format", "mermaid"], input=path.read_bytes())
    assert shown.exit_code == OK and shown.stdout.startswith("flowchart LR")


@pytest.mark.parametrize(
    ("setup", "arg"),
    [
        (None, "missing.json"),
        ("dir", "d"),
        (b"not json", "bad.json"),
        (b'{"reason": "x"}', "bad.json"),
    ],
)
def test_cli_explain_unreadable_input_exits_2_with_one_line(
    tmp_path: Path, setup: bytes | str | None, arg: str
) -> None:
    if setup == "dir":
        (tmp_path / arg).mkdir()
    elif isinstance(setup, bytes):
        (tmp_path / arg).write_bytes(setup)
    shown = CliRunner().invoke(main, ["explain", str(tmp_path / arg)])
    assert shown.exit_code == UNREADABLE, shown.output
    errors = [line for line in shown.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("Error:"), shown.stderr


def test_cli_explain_unwritable_output_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "decision.json"
    path.write_bytes(b'{"allowed": true, "label": 0}')
    shown = CliRunner().invoke(main, ["explain", str(path), "-o", str(tmp_path)])
    assert shown.exit_code == UNREADABLE
    assert len([line for line in shown.stderr.splitlines() if line.strip()]) == 1


@settings(max_examples=100, deadline=None)
@given(text=_TEXT | st.text(max_size=2000), lines=st.integers(1, 4), width=st.integers(8, 80))
def test_wrapped_text_keeps_within_its_lines_and_width(text: str, lines: int, width: int) -> None:
    from guardagent.explain.diagram import visible, wrapped

    out = wrapped(text, lines, width)
    assert len(out) <= lines and all(0 < len(line) <= width for line in out)
    if len(visible(text)) <= width:
        assert out == ([visible(text)] if visible(text) else [])


def test_explain_help_shows_the_exit_table_and_drawing_imports_no_guard(tmp_path: Path) -> None:
    """Drawing decides nothing: it needs no guard graph, solver, memory, model or plotting."""
    from tests.test_first_hour import _heavy_after

    shown = CliRunner().invoke(main, ["explain", "--help"]).output
    assert "Exit status" in shown and "130" in shown and "DECISION.json" in shown
    path = tmp_path / "d.json"
    path.write_text(json.dumps(_decision("send", "d", "tool:read_inbox", "r", "p")))
    heavy = _heavy_after(["explain", str(path), "-o", str(tmp_path / "d.svg")], tmp_path)
    assert (tmp_path / "d.svg").is_file()
    assert not {"langgraph", "z3", "chromadb", "matplotlib", "openai", "langchain"} & set(heavy)
