"""The replica's Postgres pools: connections checked before use, reconnected every second.

Two faults of a plain `AsyncConnectionPool` cost requests after the database comes back:

- every pooled connection died with the old server, and each would fail the request that
  takes it next: so each is checked (one empty query) as it leaves the pool, and a dead one
  is replaced (`check=`). One dead connection means the others are likely dead too, and the
  pool's own loop would try them one by one with a growing pause between (0, 1, 2, 4 s: past
  the lock wait with 8 of them), so the first dead one has the pool check all its idle
  connections at once (:meth:`PromptPool.check`), and the request waits for a fresh one;
- the pool reconnects with exponential backoff (1, 2, 4, ... s), so after an outage of a
  minute its next attempt may be a minute away while the database already answers, and
  every thread request meanwhile waits out its lock wait and is refused: so attempts here
  come every second (:class:`_EverySecond`) for as long as the pool's `reconnect_timeout`.
"""

from __future__ import annotations

from typing import Any

from psycopg_pool import AsyncConnectionPool
from psycopg_pool.base import AttemptWithBackoff


class _EverySecond(AttemptWithBackoff):
    """Reconnection attempts a second apart (jittered), not backing off."""

    DELAY_BACKOFF = 1.0


class PromptPool(AsyncConnectionPool[Any]):
    """An `AsyncConnectionPool` that checks each connection it gives out, and reconnects at once.

    Args:
        *args: As `AsyncConnectionPool`'s (`check` defaults to an empty query, sweeping
            the pool when it fails).
        **kwargs: As `AsyncConnectionPool`'s.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("check", self._check_or_sweep)
        super().__init__(*args, **kwargs)

    async def _check_or_sweep(self, conn: Any) -> None:
        """Check `conn`; if it is dead, check every idle connection before saying so."""
        try:
            await self.check_connection(conn)
        except Exception:
            await self.check()  # the others went with it: replaced now, not one per pause
            raise

    async def _add_connection(
        self, attempt: AttemptWithBackoff | None, growing: bool = False
    ) -> None:
        if attempt is None:
            attempt = _EverySecond(timeout=self.reconnect_timeout)
        await super()._add_connection(attempt, growing=growing)
