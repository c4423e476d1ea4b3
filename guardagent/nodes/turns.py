"""Runs of one batch compute one at a time, and each between two waits in one piece.

LangGraph's async runner yields to the event loop at every node (it starts each node as a
task), so runs started together interleave node by node: all of them finish their first
node before any starts its second, every model call of the batch starts at once after the
whole batch's CPU work, and all of them come back at once. A batch whose runs take turns
(:func:`taking_turns`: a run computes only while it holds the batch's lock, given up at
every wait of a node, :func:`guardagent.nodes.steps.run_async`) does each
run's work between two waits in one piece: the first run's model call starts after one
run's work, not all of them, and the batch's work overlaps its waits.

A waiting run never holds the turn, and nothing a run waits on (model, sandbox, worker
thread) needs it, so turns cannot deadlock a batch; a run that awaited something else
while holding its turn would only hold up the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar


class Turn:
    """One run's hold on its batch's lock (taken in arrival order)."""

    def __init__(self, turns: asyncio.Lock) -> None:
        self._turns = turns
        self._held = False

    async def take(self) -> None:
        """Wait for the turn (a no-op while held)."""
        if not self._held:
            await self._turns.acquire()
            self._held = True

    def give(self) -> None:
        """Let the next run compute (a no-op when not held)."""
        if self._held:
            self._held = False
            self._turns.release()


TURN: ContextVar[Turn | None] = ContextVar("guardagent_turn", default=None)


@asynccontextmanager
async def taking_turns(turns: asyncio.Lock) -> AsyncIterator[None]:
    """Within: this run computes only while it holds a turn of `turns` (its batch's).

    Only for runs of a graph whose every wait is a node's wait (GuardAgent's own graph: no
    checkpointer, no store).
    """
    turn = Turn(turns)
    token = TURN.set(turn)
    try:
        await turn.take()
        yield
    finally:
        turn.give()
        TURN.reset(token)
