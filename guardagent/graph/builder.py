r"""The guard workflow as a LangGraph `StateGraph`.

```
START -> admit --(over the size limit)--> decide (deny) -> END
admit -> retrieve --(verified program)--> execute
                  \--(model)--> plan -> code -> execute
execute --ok--> decide -> END  (a generated program goes through remember first)
execute --ok, the profile names a policy model (or the program assigned predicates of the
          rules derived from the request)--> verify (z3, per rule) -> decide / remember
execute --unreadable evidence--> decide (deny, naming what could not be read) -> END
execute --error, attempts left, model--> debug -> code (a verified program's error: decide)
otherwise --> decide (fail closed) -> END
```
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Literal, cast

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from guardagent.context import GuardContext, RunContext
from guardagent.counterfactuals.derived import derived_policy
from guardagent.graph.runnables import dual, inline, routed
from guardagent.llm import is_offline
from guardagent.nodes.admit import admit
from guardagent.nodes.code import acode, code
from guardagent.nodes.debug import adebug, debug
from guardagent.nodes.decide import decide
from guardagent.nodes.execute import aexecute, execute
from guardagent.nodes.plan import aplan, plan
from guardagent.nodes.remember import aremember, remember
from guardagent.nodes.retrieve import aretrieve, retrieve
from guardagent.nodes.runtime import bind_settings, context_of, profile_of
from guardagent.nodes.state import GuardInput, GuardOutput, GuardState
from guardagent.nodes.verify import after_verify, verify
from guardagent.policy.runs import needs_verify


def after_retrieve(
    state: GuardState, runtime: Runtime[GuardContext]
) -> Literal["execute", "plan", "decide"]:
    """A verified program runs directly; otherwise the model plans; offline, we fail closed."""
    if state.get("error"):
        return "decide"
    if state.get("program"):
        return "execute"
    return "decide" if is_offline(context_of(runtime).model) else "plan"


def after_llm(state: GuardState) -> Literal["continue", "decide"]:
    """A model failure (after its client's retries) ends the run with a denial."""
    return "decide" if state.get("error") else "continue"


def after_execute(
    state: GuardState, runtime: Runtime[GuardContext]
) -> Literal["decide", "remember", "debug", "verify"]:
    """Retry through the debugger while attempts remain and a model can write code."""
    execution = state.get("execution")
    ctx = context_of(runtime)
    if execution and execution.get("unreadable"):
        return "decide"  # the evidence, not the program, is at fault: no retry, no model
    if execution and execution["ok"]:
        profile = profile_of(ctx)
        if needs_verify(profile) or (execution.get("predicates") and derived_policy(profile)):
            return "verify"  # the policy model's rules, with z3; then remember / decide
        # A generated program decides only after it verifies (remember); reuse or not.
        return "remember" if state.get("program_source") == "generated" else "decide"
    if state.get("program_source") == "memory":
        # A verified program that fails on this event denies: the event's text must not be
        # able to choose the path into the model's prompt.
        return "decide"
    if is_offline(ctx.model) or state.get("attempts", 0) >= ctx.max_attempts:
        return "decide"
    return "debug"


def after_admit(state: GuardState) -> Literal["retrieve", "decide"]:
    """An event refused at the door goes straight to the denial."""
    return "decide" if state.get("error") else "retrieve"


def state_only(edge: Callable[[GuardState], Hashable]) -> Callable[[GuardState, Any], Hashable]:
    """An edge of the state alone, called as every router is: `(state, runtime)`."""
    return lambda state, runtime: edge(state)


def build_graph(
    settings: GuardContext | None = None,
) -> StateGraph[GuardState, Any, GuardInput, GuardOutput]:
    """The uncompiled guard graph; compile it with the checkpointer of your choice.

    Each node that branches routes itself (:func:`guardagent.graph.runnables.routed`): it
    returns a `Command` whose `goto` its edge function chose, and declares the nodes it may
    go to, so the graph reads and draws as the diagram above.

    Args:
        settings: The deployment's settings for runs whose context is not a `GuardContext`
            built by Python code (a client's or a host graph's dict contributes only what
            :class:`RunContext` holds). `None`: the environment's settings.
    """
    bind = bind_settings(settings)
    builder = StateGraph(
        GuardState,
        context_schema=cast(Any, RunContext),
        input_schema=GuardInput,
        output_schema=GuardOutput,
    )
    after_model = state_only(after_llm)
    to_code: dict[Hashable, str] = {"continue": "code", "decide": "decide"}
    to_execute: dict[Hashable, str] = {"continue": "execute", "decide": "decide"}
    admitted = ("retrieve", "decide")
    retrieved = ("execute", "plan", "decide")
    executed = ("decide", "remember", "debug", "verify")
    verified = ("remember", "decide")

    def node(name: str, func: Any, afunc: Any, route: Any, ends: Any) -> None:
        """Add a branching node: sync and async forms (or one inline form), routed."""
        runnable = (
            inline(routed(bind(func), route, ends))
            if afunc is None
            else dual(routed(bind(func), route, ends), routed(bind(afunc), route, ends))
        )
        # Drawn as the conditional edge was: labelled with the route's name unless it is the node's.
        pairs = ends.items() if isinstance(ends, dict) else ((end, end) for end in ends)
        labels = {str(end): str(key) for key, end in pairs}
        builder.add_node(name, runnable, destinations=labels)

    node("admit", admit, None, state_only(after_admit), admitted)
    node("retrieve", retrieve, aretrieve, bind(after_retrieve), retrieved)
    node("plan", plan, aplan, after_model, to_code)
    node("code", code, acode, after_model, to_execute)
    node("execute", execute, aexecute, bind(after_execute), executed)
    node("debug", debug, adebug, after_model, to_code)
    builder.add_node("remember", dual(bind(remember), bind(aremember)))
    node("verify", verify, None, state_only(after_verify), verified)
    builder.add_node("decide", inline(bind(decide)))
    builder.add_edge(START, "admit")
    builder.add_edge("remember", "decide")
    builder.add_edge("decide", END)
    return builder
