"""admit: refuse an event the guard will not read, before anything reads it."""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.nodes.runtime import context_of
from guardagent.nodes.state import GuardState, fresh_state
from guardagent.readers.evidence import Unreadable


def admit(state: GuardState, runtime: Runtime[GuardContext]) -> dict[str, Any]:
    """Start the event afresh, and deny it when it is over the size limit (default 1 MB).

    Every per-event key is written anew (:func:`fresh_state`): under a checkpointer the
    thread's state still holds the previous event's keys. The limit is checked first, so an
    oversized event costs no reader, no memory search and no model call: attacker text
    cannot choose how much work the guard does. The denial names it in `unreadable`
    (``oversized_event``): evidence the guard refused to read, like a trace over its limit.
    """
    fresh = fresh_state() | {"started_at": time.perf_counter()}
    ctx = context_of(runtime)
    size = len(state.get("agent_input") or "") + len(state.get("agent_output") or "")
    if size > ctx.max_event_chars:
        detail = f"{size:,} characters, over the limit of {ctx.max_event_chars:,} (max_event_chars)"
        fresh["error"] = f"event too large: {detail}"
        # evidence the guard refused to read, as a trace over its limit is: the same
        # `unreadable` entry, so `check` exits 2 for both (docs/reference/exit-status.md)
        fresh["refused"] = [Unreadable(reason="oversized_event", detail=detail)]
    return fresh
