"""Run the guard graph for one event from inside a host graph, with traceable names.

The middleware and `guard_node` both run the guard *inside* a host LangGraph run. Two things
matter there that `GuardAgent.check` does not handle:

- The guard graph is compiled with ``checkpointer=False``: an event's guard run is
  stateless, and inheriting the host's checkpointer would make a re-executed host node (after
  an interrupt/resume) resume the *old* guard run instead of checking afresh, and would
  checkpoint the guard's internals for nothing.
- Each run is named (``run_name``) and carries what is being guarded as metadata; naming and
  the outcome run are :mod:`guardagent.guard.runs`, shared with `GuardAgent.check`.
- The host's user facts travel as data (`user_facts`) next to the event text, so guard
  programs get them exactly; the text block of the event is for display and memory.

Settings are the guard's (its :class:`GuardAgent`, built by the host's code): the host graph's
own context or state never changes the model, endpoint, memory or limits of a guard run.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from guardagent.agent import GuardAgent
from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.guard.runs import ainvoke_guard, invoke_guard
from guardagent.readers.user_facts import normalize_facts
from guardagent.surrogates import text_without_surrogates


@lru_cache(maxsize=1)
def stateless_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """The guard graph compiled never to use a checkpointer, even as a host's subgraph."""
    return build_graph().compile(name="guardagent", checkpointer=False)


def as_guard(guard_or_profile: GuardAgent | str, **settings: Any) -> GuardAgent:
    """A `GuardAgent`, built from a profile name/path and settings when not given one."""
    if isinstance(guard_or_profile, GuardAgent):
        if not settings:
            return guard_or_profile
        guard = copy.copy(guard_or_profile)  # never change the caller's guard
        guard.context = replace(guard.context, **settings)
        return guard
    return GuardAgent(profile=guard_or_profile, **settings)


def _context(guard: GuardAgent, user_facts: Mapping[str, Any] | None) -> GuardContext:
    """The guard's own settings, with this event's facts (checked: a JSON object) when given.

    Raises:
        ValueError: facts that are not a JSON object (a host bug: loud, and nothing runs).
    """
    if user_facts is None:
        return guard.context
    return replace(guard.context, user_facts=normalize_facts(user_facts))


def run_guard(
    guard: GuardAgent,
    agent_input: str,
    agent_output: str,
    *,
    run_name: str,
    metadata: Mapping[str, Any] | None = None,
    user_facts: Mapping[str, Any] | None = None,
) -> GuardDecision:
    """Guard one event as a named, traced child of the current host run.

    Args:
        guard: The guard whose settings (the deployment's) the run uses.
        agent_input: The event's input (the user's request; the facts block for display).
        agent_output: The event's output (untrusted).
        run_name: Trace name of the run.
        metadata: Trace metadata known before the run.
        user_facts: The host's facts about the user, handed to the program as data; None to
            let the program read the event's ``User information:`` block.
    """
    return invoke_guard(
        stateless_graph(),
        _context(guard, user_facts),
        agent_input,
        agent_output,
        run_name=run_name,
        metadata=metadata,
    )


async def arun_guard(
    guard: GuardAgent,
    agent_input: str,
    agent_output: str,
    *,
    run_name: str,
    metadata: Mapping[str, Any] | None = None,
    user_facts: Mapping[str, Any] | None = None,
) -> GuardDecision:
    """Async :func:`run_guard`."""
    return await ainvoke_guard(
        stateless_graph(),
        _context(guard, user_facts),
        agent_input,
        agent_output,
        run_name=run_name,
        metadata=metadata,
    )


def facts_in(source: Any, key: str) -> Mapping[str, Any] | None:
    """The mapping under `key` of a dict or an object (a run's context, a state), else None."""
    if source is None:
        return None
    found = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
    return found if isinstance(found, Mapping) else None


def describe_denial(decision: GuardDecision) -> str:
    """One readable line: what was violated and why (for a ToolMessage or a log).

    Written without lone surrogates (U+FFFD, :mod:`guardagent.surrogates`): the message goes
    into the agent's checkpoint, whose encoder refuses them.
    """
    if isinstance(decision.violations, dict):
        parts = [f"{table}: {', '.join(cols)}" for table, cols in decision.violations.items()]
    else:
        parts = list(decision.violations)
    violated = "; ".join(parts) or ("the guard could not decide" if decision.error else "denied")
    reason = decision.reason.strip()
    if reason and reason[-1] not in ".!?":
        reason += "."
    return text_without_surrogates(f"{violated}. Reason: {reason}")
