"""Pictures of a decision: its provenance chain and the rule circuit that decided it.

A denial is text; a reviewer would rather look. From a decision's JSON (as `guardagent
check` prints it) :func:`draw` builds one layered graph, read left to right:

    messages -> (argument values) -> predicates -> rules -> verdict

the messages each trace predicate was decided by (and, where the decision says, the user
message that designated the call whose result holds a value), the predicates' values, the
rules they feed and the verdict; the values that decided are marked (thick edges). It is
drawn as Mermaid (:func:`to_mermaid`, for the docs and the eval report) or as a standalone
SVG (:func:`to_svg`, `guardagent explain DECISION.json`). A decision in hand is drawn with
``to_svg(draw(view_of(decision)))``.

Everything in a decision may quote attacker text (a tool result's value, a tool's name), so
both writers escape every label: no value can add an edge, a directive or markup.
"""

from guardagent.explain.circuit import draw
from guardagent.explain.diagram import Diagram, Edge, Node
from guardagent.explain.mermaid import to_mermaid
from guardagent.explain.reading import DecisionView, UnreadableDecision, read_decision, view_of
from guardagent.explain.svg import to_svg

__all__ = [
    "DecisionView",
    "Diagram",
    "Edge",
    "Node",
    "UnreadableDecision",
    "draw",
    "read_decision",
    "to_mermaid",
    "to_svg",
    "view_of",
]
