"""Walk one event through the guard graph node by node, from the graph's own update stream.

`graph.stream(..., stream_mode="updates")` yields, after each node, the state keys that node
wrote; these helpers keep those updates in order and say in a line or two what each node did,
so a notebook or a debugging session can show why a decision came out as it did.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.eval.report import clip

Step = tuple[str, dict[str, Any]]


def stream_steps(
    agent_input: str,
    agent_output: str,
    context: GuardContext,
    graph: CompiledStateGraph[Any, Any, Any, Any] | None = None,
) -> list[Step]:
    """(node name, state update) for every node the event went through, in order."""
    if graph is None:
        from guardagent.graph import graph as compiled

        graph = compiled
    steps: list[Step] = []
    chunks = graph.stream(
        {"agent_input": agent_input, "agent_output": agent_output},
        context=context,
        stream_mode="updates",
    )
    for chunk in chunks:
        for node, update in chunk.items():
            steps.append((node, dict(update or {})))
    return steps


def describe_step(node: str, update: dict[str, Any], limit: int = 400) -> str:
    """A short account of what one node did, from the keys it wrote."""
    if node == "admit":
        if update.get("error"):
            return f"refused the event before reading it: {update['error']}"
        return "admitted the event (within the size limit); per-event state started afresh"
    if node == "retrieve":
        parts = []
        if update.get("program_source") == "memory":
            program = update.get("program") or ""
            parts.append(
                f"took the verified program for this request from memory "
                f"({len(program)} chars): no model call needed"
            )
        if "demonstrations" in update:
            demos = update["demonstrations"]
            shown = ", ".join(f"{d['id'][:8]} (label {d['label']})" for d in demos)
            parts.append(f"retrieved {len(demos)} demonstration(s) for the prompts: {shown or '-'}")
        return "; ".join(parts) or "nothing in memory for this request"
    if node == "plan":
        return "plan:\n" + clip(update.get("plan") or update.get("error", ""), limit)
    if node == "code":
        return "program:\n" + clip(update.get("program") or update.get("error", ""), limit)
    if node == "execute":
        result = update.get("execution") or {}
        attempt = update.get("attempts", "?")
        if result.get("ok"):
            return f"attempt {attempt}: ran; verdict {result.get('verdict')}"
        return f"attempt {attempt}: failed: {clip(result.get('error'), limit)}"
    if node == "debug":
        return "diagnosis:\n" + clip(update.get("feedback") or update.get("error", ""), limit)
    if node == "remember":
        return (
            "verified the generated program on the profile's demonstrations; one that "
            "reproduces them all is stored, so later events reuse it with no model call"
        )
    if node == "decide":
        d: GuardDecision = update["guard_decision"]
        verdict = "ALLOW" if d.allowed else "DENY"
        extra = f"; error: {d.error}" if d.error else ""
        return (
            f"{verdict} (label {d.label}) violations={d.violations}; reason: {d.reason}; "
            f"source {d.program_source}, attempts {d.attempts}, "
            f"LLM calls {d.llm_calls}{extra}"
        )
    return clip(str(update), limit)


def trace_markdown(steps: Iterable[Step], limit: int = 400) -> str:
    """The trace as Markdown: one numbered section per node, in the order they ran."""
    parts = []
    for number, (node, update) in enumerate(steps, start=1):
        text = describe_step(node, update, limit)
        parts.append(f"**{number}. {node}**\n\n```\n{text}\n```")
    return "\n\n".join(parts)
