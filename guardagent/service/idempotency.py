"""Decide once: a request's idempotency key names its stored decision, on every replica.

A host that times out and sends the same request again must get the decision already made,
not a second run (which would also advance the thread twice). Two copies of one request on
two replicas cannot both store a decision: a request on a thread holds the thread's lock
(:mod:`guardagent.service.locks`; the thread is part of the request, so both copies wait for
the same lock), one without a thread holds its key's lock; and the key is stored in the
transaction that records the decision on its thread (:meth:`ThreadStore.append`: one more
row, sent with the head's compare-and-set), so a replica that dies between the two leaves
neither, and a run whose key was stored meanwhile (a lost lock, or the same key on another
request) stores nothing (:class:`KeyTaken`: the run is refused and reads the stored one). The
stored row keeps a fingerprint of the request: the same key on a *different* request is
refused (:class:`KeyReused`), never answered with another request's decision. Only decisions
are stored; a request denied because the service could not decide it (a busy thread, a
database error) is not, so its retry is decided.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

from guardagent.service.heads import WriteRefused

TABLE = "guardagent_idempotency"
MAX_KEY_CHARS = 256


class KeyReused(Exception):
    """The idempotency key was used before, for a different request."""


class KeyTaken(WriteRefused):
    """The key was stored meanwhile (by a replica that took over its lock): nothing written."""


def _taken(key: str) -> KeyTaken:
    return KeyTaken(f"idempotency_key {key[:80]!r} was stored by another run meanwhile")


class Stored(NamedTuple):
    """A decided request: its fingerprint and the response body sent."""

    fingerprint: str
    body: dict[str, Any]


def fingerprint(kind: str, request: Mapping[str, Any]) -> str:
    """SHA-256 of the request as canonical JSON (key order and spacing do not count)."""
    fields = {k: v for k, v in request.items() if k != "idempotency_key"}
    canonical = json.dumps(
        [kind, fields], sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def check_reuse(key: str, stored: Stored | None, fp: str) -> Stored | None:
    """The stored decision for a retry of the same request, None for a new key.

    Raises:
        KeyReused: the key belongs to another request.
    """
    if stored is None:
        return None
    if stored.fingerprint != fp:
        raise KeyReused(f"idempotency_key {key!r} was used for a different request")
    return stored


class Decisions(Protocol):
    """Where decided requests are kept; `session` is the lock's connection (or None)."""

    async def get(self, session: Any, key: str) -> Stored | None:
        """The stored decision of `key`, if any."""

    async def put(self, session: Any, key: str, stored: Stored) -> Confirm:
        """Send the write of `stored` under `key`.

        The returned :data:`Confirm`, called once the statement's result is in (at once, or
        after its pipeline's sync), raises :class:`KeyTaken` if the key was already kept.
        """


Confirm = Callable[[], None]
"""Raises if a write sent earlier (perhaps in a pipeline, answered later) did not happen."""


def _done() -> None:
    return None


class MemoryDecisions:
    """The last `limit` decided keys of this process (a single replica without Postgres)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._rows: OrderedDict[str, Stored] = OrderedDict()

    async def get(self, session: Any, key: str) -> Stored | None:
        """The stored decision of `key`, if any."""
        return self._rows.get(key)

    async def put(self, session: Any, key: str, stored: Stored) -> Confirm:
        """Keep `stored`; the oldest keys go past `limit`.

        Raises:
            KeyTaken: the key is kept already (at once: nothing to roll back here).
        """
        if key in self._rows:
            raise _taken(key)
        self._rows[key] = stored
        while len(self._rows) > self.limit:
            self._rows.popitem(last=False)
        return _done


class PostgresDecisions:
    """Rows of `guardagent_idempotency` (key, fingerprint, decision, created_at).

    The decision is kept as JSON text, not `jsonb`, so a replay has the fields in the order
    the first answer had. Rows are never deleted by the service: drop old ones by
    `created_at` on the deployment's schedule.
    """

    @staticmethod
    async def setup(conn: Any) -> None:
        """Create the table if it is missing (every replica may run this at start)."""
        await conn.execute(
            f"CREATE TABLE IF NOT EXISTS {TABLE} (key text PRIMARY KEY, fingerprint text NOT NULL,"
            " decision text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
        )

    async def get(self, session: Any, key: str) -> Stored | None:
        """The stored decision of `key`, if any."""
        cur = await session.execute(
            f"SELECT fingerprint, decision FROM {TABLE} WHERE key = %s", (key,)
        )
        row = await cur.fetchone()
        return None if row is None else Stored(row[0], json.loads(row[1]))

    async def put(self, session: Any, key: str, stored: Stored) -> Confirm:
        """Send the row's insert on `session` (in a pipeline: answered at its sync).

        The returned confirmation raises :class:`KeyTaken` when a row was already there (its
        lock was lost, or the key names another request): the transaction must roll back.
        """
        cur = await session.execute(
            f"INSERT INTO {TABLE} (key, fingerprint, decision) VALUES (%s, %s, %s) "
            "ON CONFLICT (key) DO NOTHING",
            (key, stored.fingerprint, json.dumps(stored.body, ensure_ascii=False)),
        )

        def confirm() -> None:
            if cur.rowcount != 1:
                raise _taken(key)

        return confirm
