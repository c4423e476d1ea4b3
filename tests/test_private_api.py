"""LangGraph's private API (`langgraph._internal`) is used in one module only.

Routing is public API (each branching node returns a `Command` and declares its
`destinations`). What is left private is `RunnableCallable`: a node with a sync and an async
form that LangGraph injects `config` and `runtime` into without a traced child run, which
LangGraph 1.x has no public class for. Kept in :mod:`guardagent.graph.runnables` (pinned
with LangGraph's major version), so a LangGraph upgrade that moves it breaks one module.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "guardagent"


def _private_importers() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            if any(name.split(".")[:2] == ["langgraph", "_internal"] for name in names):
                found.add(path.relative_to(PACKAGE.parent).as_posix())
    return found


def test_only_the_runnables_module_uses_langgraphs_private_api() -> None:
    assert _private_importers() == {"guardagent/graph/runnables.py"}
