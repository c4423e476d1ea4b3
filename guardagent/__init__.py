"""GuardAgent: a LangGraph guard agent that writes and runs guardrail code for LLM agents.

Exports are loaded on first use (PEP 562), so `import guardagent.tools` (as the sandbox's
pre-warmed process does) stays small and fast: it must not pull in LangGraph or Chroma.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: the hook's path imports no typing (its ~2.5 ms)
if TYPE_CHECKING:
    from typing import Any

    from guardagent.agent import GuardAgent
    from guardagent.context import GuardContext
    from guardagent.decision import GuardDecision
    from guardagent.graph.builder import build_graph
    from guardagent.profiles.loader import Profile, ProfileError, load_profile
    from guardagent.tools.registry import DEFAULT_TOOLBOX, Toolbox, guard_tool

_EXPORTS = {
    "GuardAgent": "guardagent.agent",
    "GuardContext": "guardagent.context",
    "GuardDecision": "guardagent.decision",
    "build_graph": "guardagent.graph.builder",
    "Profile": "guardagent.profiles.loader",
    "ProfileError": "guardagent.profiles.loader",
    "load_profile": "guardagent.profiles.loader",
    "DEFAULT_TOOLBOX": "guardagent.tools.registry",
    "Toolbox": "guardagent.tools.registry",
    "guard_tool": "guardagent.tools.registry",
}

__all__ = [
    "DEFAULT_TOOLBOX",
    "GuardAgent",
    "GuardContext",
    "GuardDecision",
    "Profile",
    "ProfileError",
    "Toolbox",
    "build_graph",
    "guard_tool",
    "load_profile",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'guardagent' has no attribute {name!r}")
