"""A diagram as Mermaid flowchart text, for the docs and the eval report.

Every label is quoted and every character outside a small safe set is written as a Mermaid
entity code (``#34;`` for a double quote): a decision's text may be an attacker's (a tool
result's value), and a quote, a bracket, ``-->``, ``%%`` or a newline in it must not end the
label and add an edge, a ``click`` callback or an ``%%{init}%%`` directive. Node ids are the
diagram's own (:mod:`guardagent.explain.diagram`). Edges that decided are thick (``==>``).
"""

from __future__ import annotations

from collections.abc import Iterable

from guardagent.explain.diagram import Diagram, Node, visible

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:_/@=+?!'()-")
_SHAPES = {
    "message": ('["', '"]'),
    "value": ('(["', '"])'),
    "predicate": ('{{"', '"}}'),
    "rule": ('["', '"]'),
    "verdict": ('(("', '"))'),
}
_CLASSES = {
    "user": "fill:#e3f2fd,stroke:#1565c0",
    "system": "fill:#e3f2fd,stroke:#1565c0",
    "trusted_tool": "fill:#e8f5e9,stroke:#2e7d32",
    "untrusted_tool": "fill:#fff3e0,stroke:#e65100",
    "model": "fill:#f3e5f5,stroke:#6a1b9a",
    "violated": "fill:#ffebee,stroke:#c62828",
    "possibly_violated": "fill:#fff8e1,stroke:#f9a825",
    "holds": "fill:#e8f5e9,stroke:#2e7d32",
    "denied": "fill:#c62828,color:#ffffff",
    "allowed": "fill:#2e7d32,color:#ffffff",
    "marked": "stroke-width:3px",
}
"""Colour per tone (trust class, rule status, verdict); unknown tones stay plain."""


def label(lines: Iterable[str]) -> str:
    """Lines as one quoted-label body: safe characters kept, the rest as ``#code;``.

    Whitespace runs become one space and invisible controls U+FFFD (:func:`visible`); lines
    are joined with ``<br/>`` (the only markup, and never from the text: its ``<`` is
    ``#60;``).
    """
    out = []
    for line in lines:
        text = visible(line)
        out.append("".join(c if c in _SAFE else f"#{ord(c)};" for c in text))
    return "<br/>".join(out)


def _node(node: Node) -> str:
    opener, closer = _SHAPES[node.kind]
    return f"    {node.id}{opener}{label(node.lines)}{closer}"


def to_mermaid(diagram: Diagram) -> str:
    """The diagram as a ``flowchart LR`` (no trailing newline)."""
    lines = ["flowchart LR"]
    lines += [_node(n) for n in diagram.nodes]
    for e in diagram.edges:
        arrow = "==>" if e.marked else "-->"
        text = f'|"{label([e.label])}"|' if e.label else ""
        lines.append(f"    {e.source} {arrow}{text} {e.target}")
    tones: dict[str, list[str]] = {}
    for n in diagram.nodes:
        if n.tone in _CLASSES:
            tones.setdefault(n.tone, []).append(n.id)
        if n.marked:
            tones.setdefault("marked", []).append(n.id)
    for tone, ids in tones.items():
        lines.append(f"    classDef {tone} {_CLASSES[tone]}")
        lines.append(f"    class {','.join(ids)} {tone}")
    return "\n".join(lines)
