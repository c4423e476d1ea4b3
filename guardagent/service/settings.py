"""The service's settings: only from the deployment's environment, never from a request.

A request chooses a registered profile *name*, the host's facts and consent records, a
thread and an idempotency key (see :mod:`guardagent.service.requests`); everything else is
read here from `GUARDAGENT_*` variables when the service starts, and a variable that does not
parse stops the start, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from guardagent.context import GuardContext
from guardagent.environment import CHROMA_URL, field_values, value
from guardagent.service.access import Grant, TokensFileError, read_grants

_MIB = 1024 * 1024


@dataclass(frozen=True, kw_only=True)
class ServiceSettings:
    """One replica's settings.

    Attributes:
        guard: The guard's deployment settings (:meth:`GuardContext.from_env`: profile,
            model, memory, limits, trace key); `GUARDAGENT_CHROMA_URL` sets its memory URL.
        database_url: Postgres URL (`GUARDAGENT_DATABASE_URL`) for thread state, thread
            locks and stored decisions, shared by every replica. None: all three live in
            this process (one replica only).
        pool_size: Connections of each of the replica's two pools (`GUARDAGENT_POOL_SIZE`):
            one pool holds thread locks for the length of a run (so at most this many runs
            on threads at once; more wait, within the lock wait), the other serves short
            checkpoint reads and writes. Postgres must allow replicas x 2 x this.
        lock_wait_seconds: How long a request waits for its thread (or idempotency key)
            before it is denied with the reason (`GUARDAGENT_LOCK_WAIT_SECONDS`).
        service_token: Bearer token every decision request must carry
            (`GUARDAGENT_SERVICE_TOKEN`): it reads and decides on every thread. None (and no
            `service_tokens`) accepts any caller that can reach the port.
        service_tokens_file: A JSON file of scoped tokens (`GUARDAGENT_SERVICE_TOKENS_FILE`):
            each token's SHA-256, its thread-id prefix and its scopes, ``decide`` and/or
            ``read`` (:mod:`guardagent.service.access`), so one tenant's token cannot read or
            decide on another's threads. Read once, as the replica starts; a file that does
            not parse stops the start.
        max_request_bytes: Larger request bodies are refused (413) unread
            (`GUARDAGENT_MAX_REQUEST_BYTES`; default: the trace limit plus 1 MiB).
        shutdown_seconds: Once the drain is over, how long in-flight requests may take to
            finish before they are cut (`GUARDAGENT_SHUTDOWN_SECONDS`).
        drain_seconds: On SIGTERM (or Ctrl-C), how long the replica keeps serving while
            `/readyz` answers 503 "draining", before it stops accepting connections
            (`GUARDAGENT_DRAIN_SECONDS`); set it to what your load balancer needs to see the
            replica not ready (its check interval times its failure count) plus its own
            propagation delay. Answers given meanwhile close their connections, so keep-alive
            clients reconnect (to another replica) rather than find theirs cut. 0: no drain.
            A second signal ends the drain at once.
        request_seconds: The server-side deadline of every request, counted once its body
            is read (`GUARDAGENT_REQUEST_SECONDS`): past it a decision request is answered
            503 (a denial, with ``Retry-After``), a thread's history 503, and what it waited
            on (a stalled database, a guard run) is cancelled, its thread's lock freed (a
            guard run in a worker thread, e.g. a model call, ends on its own time). Keep it
            above the lock wait plus a decision's time, and under the clients' timeout.
        body_seconds: How long a request's body may take to arrive once its headers did
            (`GUARDAGENT_BODY_SECONDS`); a slower one is refused (408), so a client cannot
            hold a connection open by sending its body a byte at a time.
        header_seconds: How long a request's head (request line and headers) may take to
            arrive, from the connection or from the previous answer on it
            (`GUARDAGENT_HEADER_SECONDS`); a slower one is closed (408), so a client cannot
            hold a descriptor by trickling header bytes before it is authenticated.
        max_pending_connections: How many connections may wait for their request head at
            once (`GUARDAGENT_MAX_PENDING_CONNECTIONS`); past it the one waiting longest is
            closed, so slow clients cannot exhaust the replica's descriptors while a client
            whose head arrives at once still gets in. Keep it well under the process's
            descriptor limit (`ulimit -n`) minus the database pools.
    """

    guard: GuardContext = field(default_factory=GuardContext)
    database_url: str | None = field(default=None, repr=False)
    pool_size: int = 8
    lock_wait_seconds: float = 10.0
    service_token: str | None = field(default=None, repr=False)
    service_tokens_file: str | None = None
    service_tokens: tuple[Grant, ...] = field(init=False, default=(), repr=False)
    max_request_bytes: int = 0
    shutdown_seconds: float = 30.0
    drain_seconds: float = 10.0
    request_seconds: float = 60.0
    body_seconds: float = 30.0
    header_seconds: float = 10.0
    max_pending_connections: int = 256

    def __post_init__(self) -> None:
        if self.max_request_bytes <= 0:
            object.__setattr__(self, "max_request_bytes", self.guard.max_trace_bytes + _MIB)
        if self.service_tokens_file:  # the file's grants, read once (TokensFileError)
            object.__setattr__(self, "service_tokens", read_grants(self.service_tokens_file))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ServiceSettings:
        """The settings from `GUARDAGENT_*` variables; unset or empty ones keep defaults.

        The variables are the ``service`` rows of :data:`guardagent.environment.SETTINGS`.

        Raises:
            ValueError: a variable that does not parse, naming it.
        """
        guard = GuardContext.from_env(environ)
        chroma = value(CHROMA_URL, environ)
        if chroma:
            if guard.memory_url and guard.memory_url != chroma:
                raise ValueError(f"{CHROMA_URL.name} and GUARDAGENT_MEMORY_URL differ; set one")
            guard = replace(guard, memory_url=chroma)
        try:
            return cls(guard=guard, **field_values("service", environ))
        except TokensFileError as exc:
            raise ValueError(f"GUARDAGENT_SERVICE_TOKENS_FILE: {exc}") from None
