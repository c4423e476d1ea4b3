"""The served and exported graphs are compiled on demand, not when their module is imported.

`langgraph.json` names a graph factory (LangGraph's server calls a function it finds there);
`from guardagent.graph import graph` and `guardagent.integrations.server.graph` keep working,
compiled on first access and once per process.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

from langgraph.graph.state import CompiledStateGraph

REPO = Path(__file__).resolve().parents[1]


def _fresh(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout.strip().splitlines()[-1]


def test_langgraph_json_names_a_factory_for_the_guard() -> None:
    spec = json.loads((REPO / "langgraph.json").read_text())["graphs"]["guardagent"]
    path, name = spec.rsplit(":", 1)
    assert path == "./guardagent/integrations/server.py"
    from guardagent.integrations import server

    factory = getattr(server, name)
    assert callable(factory) and not inspect.signature(factory).parameters
    graph = factory()
    assert isinstance(graph, CompiledStateGraph)
    assert factory() is graph  # compiled once per process, not per run
    assert server.graph is graph  # the old attribute is the same graph


def test_importing_the_graph_modules_compiles_nothing() -> None:
    out = _fresh(
        "import sys, guardagent.graph, guardagent.integrations.server as server\n"
        "import guardagent.graph as g\n"
        "print(sorted(k for k in ('graph',) if k in vars(g) or k in vars(server)))"
    )
    assert out == "[]"


def test_the_exported_graph_is_compiled_once() -> None:
    from guardagent import graph as package
    from guardagent.graph import graph

    assert isinstance(graph, CompiledStateGraph)
    assert package.graph is graph
    assert graph.name == "guardagent"
