"""A diagram as a standalone SVG, laid out here (no Graphviz binary, no browser).

Layout: one column per layer (:meth:`Diagram.columns`: ordered to cross few edges), each
column centred; edges are cubic curves from a box's right side to the next box's
left. Everything is a pure function of the diagram, so the same decision gives the same
bytes. Text is escaped for XML (characters XML 1.0 cannot hold become U+FFFD) and sits only
in ``<text>`` and ``<title>``: a value holding ``</text><script>`` stays text. A
predicate's value is written in its box (an edge into a rule only says it by its colour),
and what a message did in a chain in the message's box. Each box and edge carries
``data-`` attributes (kind, from, to, marked) so tests and tools read the structure back
with an XML parser.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import escape, quoteattr

from guardagent.explain.diagram import Diagram, Edge, Node
from guardagent.surrogates import text_without_surrogates

CHAR_W = 7.2
"""Width of one character of the 12 px monospace font (the layout's only font metric)."""
LINE_H = 16
PAD = 8
GAP_X = 70
GAP_Y = 18
MARGIN = 16

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""One character XML 1.0 cannot hold (a character class: one step per character)."""

_FILL = {
    "user": ("#e3f2fd", "#1565c0"),
    "system": ("#e3f2fd", "#1565c0"),
    "trusted_tool": ("#e8f5e9", "#2e7d32"),
    "untrusted_tool": ("#fff3e0", "#e65100"),
    "model": ("#f3e5f5", "#6a1b9a"),
    "true": ("#ffffff", "#455a64"),
    "false": ("#ffffff", "#455a64"),
    "open": ("#fff8e1", "#f9a825"),
    "violated": ("#ffebee", "#c62828"),
    "possibly_violated": ("#fff8e1", "#f9a825"),
    "holds": ("#e8f5e9", "#2e7d32"),
    "denied": ("#c62828", "#8e0000"),
    "allowed": ("#2e7d32", "#005005"),
}


def _xml_chars(text: str) -> str:
    """Text XML 1.0 can hold: control characters, non-characters and lone halves as U+FFFD."""
    if text.isascii() and text.isprintable():
        return text
    return _NOT_XML.sub("\ufffd", text_without_surrogates(text))


def xml_text(text: str) -> str:
    """Text for an element's content: XML-safe characters, ``&``, ``<``, ``>`` escaped."""
    return escape(_xml_chars(text))


def _attr(text: str) -> str:
    """A quoted attribute value (quotes, newlines and tabs escaped too)."""
    return quoteattr(_xml_chars(text), {"\n": "&#10;", "\t": "&#9;", "\r": "&#13;"})


def _size(node: Node) -> tuple[float, float]:
    width = max((len(line) for line in node.lines), default=1) * CHAR_W + 2 * PAD
    return width, len(node.lines) * LINE_H + 2 * PAD - 4


def _box(node: Node, x: float, y: float, w: float, h: float) -> list[str]:
    fill, stroke = _FILL.get(node.tone, ("#ffffff", "#455a64"))
    ink = "#ffffff" if node.kind == "verdict" else "#212121"
    radius = {"message": 2, "value": 14, "predicate": 10, "rule": 2, "verdict": 18}[node.kind]
    out = [
        f'<g class="node {node.kind}" id={_attr(node.id)} data-kind="{node.kind}" '
        f'data-marked="{"true" if node.marked else ""}">',
        f"<title>{xml_text(chr(10).join(node.lines))}</title>",
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{radius}" '
        f'fill="{fill}" stroke="{stroke}" stroke-width="{3 if node.marked else 1}"/>',
    ]
    for i, line in enumerate(node.lines):
        weight = ' font-weight="bold"' if i == 0 else ""
        out.append(
            f'<text x="{x + PAD:.1f}" y="{y + PAD + 8 + i * LINE_H:.1f}" '
            f'fill="{ink}"{weight}>{xml_text(line)}</text>'
        )
    out.append("</g>")
    return out


def _ports(
    diagram: Diagram,
    place: dict[str, tuple[float, float, float, float]],
) -> dict[Edge, tuple[float, float]]:
    """Each edge's (leaving y, entering y): a box's edges spread along its side, in order.

    Spread by the other end's height, so edges that meet one box do not cross at its side
    and each edge's label, written where it enters, has a place of its own.
    """
    outgoing: dict[str, list[Edge]] = {}
    incoming: dict[str, list[Edge]] = {}
    for e in diagram.edges:
        outgoing.setdefault(e.source, []).append(e)
        incoming.setdefault(e.target, []).append(e)
    leave: dict[Edge, float] = {}
    enter: dict[Edge, float] = {}
    for sides, end, into in ((outgoing, "target", leave), (incoming, "source", enter)):
        for nid, edges in sides.items():
            _, y, _, h = place[nid]
            ordered = sorted(edges, key=lambda e: place[getattr(e, end)][1])
            for k, e in enumerate(ordered):
                into[e] = y + h * (k + 1) / (len(ordered) + 1)
    return {e: (leave[e], enter[e]) for e in diagram.edges}


def to_svg(diagram: Diagram) -> str:
    """The diagram as one SVG document (UTF-8 text, ends with a newline)."""
    columns = diagram.columns()
    layer = {n.id: c for c, col in enumerate(columns) for n in col}
    sizes = {n.id: _size(n) for n in diagram.nodes}
    used = range(len(columns))
    widths = [max(sizes[n.id][0] for n in columns[c]) for c in used]
    heights = [
        sum(sizes[n.id][1] for n in columns[c]) + GAP_Y * (len(columns[c]) - 1) for c in used
    ]
    total_h = max(heights, default=0)
    place: dict[str, tuple[float, float, float, float]] = {}
    x = float(MARGIN)
    for c, width, height in zip(used, widths, heights, strict=True):
        y = MARGIN + (total_h - height) / 2
        for node in columns[c]:
            w, h = sizes[node.id]
            place[node.id] = (x, y, w, h)
            y += h + GAP_Y
        x += width + GAP_X
    view_w = max(x - GAP_X + MARGIN, 2 * MARGIN)
    view_h = total_h + 2 * MARGIN
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{view_w:.0f}" '
        f'height="{view_h:.0f}" viewBox="0 0 {view_w:.0f} {view_h:.0f}" '
        'font-family="monospace" font-size="12">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#455a64"/>'
        "</marker></defs>",
    ]
    right = {n.id: place[n.id][0] + widths[layer[n.id]] for n in diagram.nodes}
    ports = _ports(diagram, place)
    for e in diagram.edges:
        sx, _, sw, _ = place[e.source]
        (y1, y2) = ports[e]
        x0, x1, x2 = sx + sw, right[e.source], place[e.target][0]
        mid = (x1 + x2) / 2
        colour, width = ("#c62828", 2.5) if e.marked else ("#90a4ae", 1)
        out.append(
            f'<path class="edge" data-from={_attr(e.source)} data-to={_attr(e.target)} '
            f'data-marked="{"true" if e.marked else ""}" fill="none" stroke="{colour}" '
            f'stroke-width="{width}" marker-end="url(#arrow)" '
            f'd="M{x0:.1f},{y1:.1f} L{x1:.1f},{y1:.1f} C{mid:.1f},{y1:.1f} '
            f'{mid:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"/>'
        )
    for node in diagram.nodes:
        out += _box(node, *place[node.id])
    out.append("</svg>")
    return "\n".join(out) + "\n"
