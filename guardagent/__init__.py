"""GuardAgent: a LangGraph guard agent that writes and runs guardrail code for LLM agents."""

from guardagent.agent import GuardAgent
from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.profiles.loader import Profile, ProfileError, load_profile
from guardagent.tools.registry import DEFAULT_TOOLBOX, Toolbox, guard_tool

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
