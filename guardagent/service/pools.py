"""The replica's Postgres pools: connections checked before use, reconnected every second.

Two faults of a plain `AsyncConnectionPool` cost requests after the database comes back:

- every pooled connection died with the old server, and each would fail the request that
  takes it next: so each is checked (one empty query) as it leaves the pool, and a dead one
  is replaced (`check=`);
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
        *args: As `AsyncConnectionPool`'s (its `check` defaults to the pool's own check).
        **kwargs: As `AsyncConnectionPool`'s.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("check", AsyncConnectionPool.check_connection)
        super().__init__(*args, **kwargs)

    async def _add_connection(self, attempt: AttemptWithBackoff | None,
                              growing: bool = False) -> None:  # fmt: skip
        if attempt is None:
            attempt = _EverySecond(timeout=self.reconnect_timeout)
        await super()._add_connection(attempt, growing=growing)
