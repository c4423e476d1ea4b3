"""The guard graph as `langgraph.json` serves it: settings from the server, choices from runs.

Under `langgraph dev` / LangGraph Server anyone who can reach the server sends the run's
input, context and config. So the served graph takes its deployment settings only from the
server's environment (:meth:`~guardagent.context.GuardContext.from_env`, read when this module
is imported and then on every run, so a bad value fails the server's start, not a run):

======================  =============================================  ==================
variable                setting                                        default
======================  =============================================  ==================
GUARDAGENT_PROFILE      default profile (built-in name or path)        ``eicu-ac``
GUARDAGENT_PROFILES     extra names runs may choose: ``name=path,...``  none
GUARDAGENT_MODEL        ``offline`` or an ``init_chat_model`` spec     ``offline``
GUARDAGENT_BASE_URL     OpenAI-compatible endpoint for the model       none
GUARDAGENT_K            demonstrations per event                       profile's
GUARDAGENT_MAX_ATTEMPTS program runs before failing closed             3
GUARDAGENT_MEMORY_DIR   embedded Chroma directory                      user data dir
GUARDAGENT_MEMORY_URL   Chroma server URL (shared memory)              none
GUARDAGENT_REUSE_PROGRAMS  reuse verified programs (true/false)        true
GUARDAGENT_TIMEOUT_SECONDS wall clock of one program run               5
======================  =============================================  ==================

API keys stay in the provider's variables (``OPENAI_API_KEY``, ...). A run may choose only
what :class:`~guardagent.context.RunContext` holds (a registered profile *name*, the user's
facts), which is also all LangGraph Studio shows; the server drops other context keys, and
the graph reads no other key even when one arrives. Task policies (extra rules and
parameters for one thread, `GuardAgent.check_trace(..., task=...)`) are host-only for the
same reason: neither the served input nor the run context has a field for them.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph.state import CompiledStateGraph

from guardagent.graph.builder import build_graph
from guardagent.nodes.runtime import check_settings, deployment_settings
from guardagent.profiles.loader import load_profile

settings = deployment_settings()  # fail at start on a malformed GUARDAGENT_* variable
check_settings(settings)
for _ref in {settings.profile, *(settings.profiles or {}).values()}:
    load_profile(_ref)  # and on a profile the deployment names that does not load


def served_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The guard graph with :class:`RunContext` as its context schema (as every built graph).

    The client's context dict is coerced into that schema: it never becomes a GuardContext,
    which the nodes trust as settings built by Python code.
    """
    return build_graph().compile(name="guardagent")


graph = served_graph()

__all__ = ["graph", "served_graph", "settings"]
