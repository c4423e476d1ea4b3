"""The guard graph: state schema, builder and a compiled instance for `langgraph.json`."""

from guardagent.graph.builder import build_graph
from guardagent.graph.state import GuardInput, GuardOutput, GuardState

graph = build_graph().compile(name="guardagent")

__all__ = ["GuardInput", "GuardOutput", "GuardState", "build_graph", "graph"]
