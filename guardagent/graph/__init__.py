"""The guard graph: state schema, builder, and a compiled instance compiled on first use.

Importing this package compiles nothing and imports no node: the nodes import
:mod:`guardagent.nodes.state` (this package's lowest module), so a package that built the graph
at import would close a circle (`guardagent.nodes.decide` -> `graph` -> `graph.builder` ->
`nodes.decide`) that breaks whichever node a process imports first. `graph` (the compiled
graph DESIGN.md exports) and `build_graph` are therefore loaded on first access (PEP 562), and
:func:`compiled_graph` is the factory behind them.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import TYPE_CHECKING, Any

from guardagent.nodes.state import GuardInput, GuardOutput, GuardState

if TYPE_CHECKING:
    from langgraph.graph.state import CompiledStateGraph

    from guardagent.graph.builder import build_graph

    graph: CompiledStateGraph[Any, Any, Any, Any]

__all__ = ["GuardInput", "GuardOutput", "GuardState", "build_graph", "compiled_graph", "graph"]


@cache
def compiled_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The guard graph compiled once per process (no checkpointer), as `graph` exports it."""
    builder = importlib.import_module("guardagent.graph.builder")
    compiled: CompiledStateGraph[Any, Any, Any, Any] = builder.build_graph().compile(
        name="guardagent"
    )
    return compiled


def __getattr__(name: str) -> Any:
    if name == "graph":
        return compiled_graph()
    if name == "build_graph":
        return importlib.import_module("guardagent.graph.builder").build_graph
    raise AttributeError(f"module 'guardagent.graph' has no attribute {name!r}")
