"""A client of the guard service with the standard library only (no LangGraph, Chroma, z3).

A hook that runs once per agent step pays its interpreter's start-up and nothing more::

    from guardagent.service.client import GuardClient

    guard = GuardClient("http://10.0.0.5:8080")  # token: $GUARDAGENT_SERVICE_TOKEN
    # or several replicas, tried in turn: GuardClient("http://10.0.0.5:8080,http://10.0.0.6:8080")
    decision = guard.check_trace(messages, profile="assistant-trace", thread_id="chat-42")
    if not decision.allowed:
        ...

Decisions come back as :class:`~guardagent.decision.GuardDecision`, the type a local
`GuardAgent.check` returns, so a host can move between a local guard and the service without
changing how it reads them (``decision["allowed"]`` and ``decision.get(...)`` still work, for
callers of the earlier dict API); the first typed decision imports pydantic. The ``*_raw``
methods return the JSON dict `guardagent check` prints with the standard library only (the
shell hook's path). A service that cannot be reached, answers without a decision, or answers
fields that do not read as one raises :class:`ServiceError`; callers deny on it
(:func:`unreachable_denial` builds the denial `check --server` prints).
"""

from __future__ import annotations

import json
import time
import urllib.parse

from guardagent.environment import SERVICE_TOKEN, value
from guardagent.service.wire import exchange

TYPE_CHECKING = False  # not typing's: the hook's path imports no typing (its ~2.5 ms)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from guardagent.decision import GuardDecision

DECISION_FIELDS = (
    "allowed",
    "label",
    "violations",
    "reason",
    "guardrailed_output",
    "program_source",
    "program",
    "attempts",
    "attempt_errors",
    "llm_calls",
    "tokens",
    "latency_ms",
    "error",
    "unreadable",
    "profile",
    "rules",
    "safety_probability",
    "remediation",
    "trace_facts",
    "trace_state",
)
"""The fields of a decision (`GuardDecision`'s, without importing pydantic): `--fields` picks
from these before anything is sent."""


class ServiceError(Exception):
    """No decision from the service: unreachable, or it refused the request.

    Attributes:
        status: The HTTP status (0 when the service was not reached).
        body: The service's JSON answer, if any.
    """

    def __init__(self, message: str, status: int = 0, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def trace_text(raw: bytes) -> str:
    r"""A trace's bytes as the text a request carries, so the service reads the same bytes.

    The guard reads a trace from its bytes (their size against `max_trace_bytes`, their
    encoding, and bytes that are not text denied as ``unparsable_trace``), so the bytes must
    arrive as they are: plain UTF-8 as its text, anything else with each byte that is not
    UTF-8 as a lone surrogate (``surrogateescape``), which the request's JSON escapes
    (``\udcXX``) and the service turns back into that byte (:func:`trace_bytes`).
    """
    return raw.decode("utf-8", "surrogateescape")


def trace_bytes(text: str) -> bytes:
    """The bytes a request's trace text stands for (the inverse of :func:`trace_text`).

    A lone surrogate outside ``surrogateescape``'s range is kept as invalid UTF-8: the guard
    denies those bytes as it denies any trace that is not text.
    """
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


def _encoded(body: Any) -> bytes:
    """The request body as UTF-8 JSON; lone surrogates (a trace's raw bytes) as escapes."""
    try:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body).encode("ascii")


def _data(body: Any) -> bytes | None:
    """The request body's bytes (None: no body).

    Raises:
        ServiceError: `body` is not JSON data (nothing is sent).
    """
    try:
        return None if body is None else _encoded(body)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ServiceError(f"the request is not JSON data: {str(exc)[:200]}") from None


def unreachable_denial(reason: str, profile: str = "") -> dict[str, Any]:
    """A fail-closed denial in the decision's shape, for when no decision came back."""
    return {
        "allowed": False,
        "label": 1,
        "violations": [],
        "reason": f"denied: {reason}",
        "error": reason,
        "profile": profile,
    }


def is_decision(status: int, answer: Any) -> bool:
    """Whether an answer is a decision the caller may act on.

    A 200 whose `allowed` is a JSON boolean agreeing with its `label` (when it has one), or
    the service's fail-closed 503, which only ever denies. Anything else (another status, a
    string or number for `allowed`, an allowed 503) did not come from the guard's decision:
    the URL may reach a proxy or another service.
    """
    if not isinstance(answer, dict) or type(answer.get("allowed")) is not bool:
        return False
    allowed, label = answer["allowed"], answer.get("label", int(not answer["allowed"]))
    if label != int(not allowed) or type(label) is not int:
        return False
    return status == 200 or (status == 503 and not allowed)


def typed(answer: dict[str, Any], status: int = 200) -> GuardDecision:
    """A decision's JSON as a :class:`GuardDecision` (fields it does not know are dropped).

    Raises:
        ServiceError: the fields do not read as a decision (a wrong type, an unknown
            program source, ...): no decision, the caller denies.
    """
    from pydantic import ValidationError

    from guardagent.decision import GuardDecision

    try:
        return GuardDecision.model_validate(answer)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3]
        )
        raise ServiceError(
            f"guard service answered {status} with fields that do not read "
            f"as a decision ({problems[:300]})",
            status,
            answer,
        ) from None


RETRYABLE_STATUS = (502, 503, 504)
"""Answers that decided nothing and may go to another replica: the service's 503 (its
database, its deadline), a proxy's 502 or 504. A connection that failed (no status) too."""
MAX_RETRY_WAIT = 5.0
"""The longest `Retry-After` the client waits before asking a replica it already asked."""


def service_urls(url: str | Sequence[str]) -> list[urllib.parse.SplitResult]:
    """The replicas' base URLs: one, several separated by commas, or a sequence of them.

    Raises:
        ValueError: an empty list or entry, or one that is not ``http(s)://host[:port]``.
    """
    given = url.split(",") if isinstance(url, str) else list(url)
    if not given:
        raise ValueError("no service URL given")
    bases = []
    for one in given:
        text = one.strip() if isinstance(one, str) else ""
        try:
            parts = urllib.parse.urlsplit(text)
            parts.port  # noqa: B018 -- a port out of range or not a number raises here
        except ValueError:
            parts = urllib.parse.urlsplit("")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"service URL must look like http://host:port, got {one!r}")
        bases.append(parts)
    return bases


class GuardClient:
    """Send events and traces to a guard service (one replica, or several to fail over).

    Args:
        url: The service's base URL, e.g. ``http://127.0.0.1:8080``; or several replicas'
            (a sequence, or one string separated by commas): a request that gets no
            decision from one (no connection, or 502/503/504) goes to the next, with the
            same idempotency key. The client keeps to the replica that last answered, so a
            replica that is down costs one failed attempt, not one per call (the order is
            shared by the threads using one client; each attempt reads it once).
        token: Bearer token; default ``$GUARDAGENT_SERVICE_TOKEN`` (none if unset).
        timeout: Seconds to wait for one attempt's answer (connect and read).
        retries: Times to resend after a connection error or a 502/503/504, each to the
            next replica; back on a replica already asked, the client first waits its
            ``Retry-After`` (at most :data:`MAX_RETRY_WAIT` s). Default: each replica once
            (0 for one URL). A request on a thread that is retried carries an idempotency
            key (made here when none is given), so the service decides it once; a
            stateless one (no thread) is stored nowhere and is simply decided again.
    """

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        token: str | None = None,
        timeout: float = 60.0,
        retries: int | None = None,
    ) -> None:
        self.bases = service_urls(url)
        self.parts = self.bases[0]
        self.token = token if token is not None else value(SERVICE_TOKEN)
        self.timeout = timeout
        self.retries = len(self.bases) - 1 if retries is None else max(0, retries)
        self._current = 0

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any, bool]:
        """One HTTP exchange with the current replica, no retry.

        Returns:
            The status, the decoded JSON, and whether a stored decision was replayed.

        Raises:
            ServiceError: the request is not JSON data, or the service was not reached or
                did not answer JSON.
        """
        return self._send(self._current, method, path, _data(body))[:3]

    def _send(
        self, index: int, method: str, path: str, data: bytes | None
    ) -> tuple[int, Any, bool, float]:
        """:meth:`request` to replica `index`, with the answer's `Retry-After` (0 if none)."""
        parts = self.bases[index]
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            status, answer_headers, raw = exchange(
                parts.scheme,
                parts.hostname or "",
                parts.port,
                method,
                parts.path.rstrip("/") + path,
                data,
                headers,
                self.timeout,
            )
        except OSError as exc:  # WireError too: no answer this client can read
            raise ServiceError(f"guard service {parts.netloc} unreachable: {exc}") from None
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):
            raise ServiceError(f"guard service answered {status} without JSON", status) from None
        wait = answer_headers.get("retry-after", "")
        return (
            status,
            answer,
            answer_headers.get("idempotent-replayed") == "true",
            min(float(wait), MAX_RETRY_WAIT) if wait.isdigit() else 0.0,
        )

    def _failing_over(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """The first answer that is not retryable, trying replica after replica.

        Returns the last answer when every attempt was retryable (a 503 denial is still a
        denial); raises the last failure when it was one.

        Raises:
            ServiceError: the last attempt reached no replica, or got no JSON.
        """
        data = _data(body)  # once: a body that is not JSON data is sent to no replica
        start, count = self._current, len(self.bases)
        waits = [0.0] * count
        for attempt in range(self.retries + 1):
            index = (start + attempt) % count
            if attempt >= count and waits[index]:
                time.sleep(waits[index])  # back on a replica that asked for a pause
            last = attempt == self.retries
            try:
                status, answer, _, waits[index] = self._send(index, method, path, data)
            except ServiceError as exc:
                if last or exc.status not in (0, *RETRYABLE_STATUS):
                    raise
                continue
            if status in RETRYABLE_STATUS and not last:
                continue
            self._current = index  # it answered: the next call starts here
            return status, answer
        raise AssertionError("unreachable")  # pragma: no cover

    def _decide(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        body = {k: v for k, v in body.items() if v is not None}
        if self.retries and "thread_id" in body and "idempotency_key" not in body:
            import uuid

            body["idempotency_key"] = str(uuid.uuid4())
        status, answer = self._failing_over("POST", path, body)
        if is_decision(status, answer):
            return dict(answer)  # a decision (200), or a fail-closed denial (503)
        message = answer.get("error") if isinstance(answer, dict) else None
        raise ServiceError(
            f"guard service refused the request ({status}): {message or answer}", status, answer
        )

    def check(
        self,
        agent_input: str,
        agent_output: str,
        *,
        profile: str | None = None,
        user_facts: dict[str, Any] | None = None,
        thread_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> GuardDecision:
        """Decide one event (the service's `GuardAgent.check`): the typed decision."""
        answer = self.check_raw(
            agent_input,
            agent_output,
            profile=profile,
            user_facts=user_facts,
            thread_id=thread_id,
            idempotency_key=idempotency_key,
        )
        return typed(answer)

    def check_raw(
        self,
        agent_input: str,
        agent_output: str,
        *,
        profile: str | None = None,
        user_facts: dict[str, Any] | None = None,
        thread_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """:meth:`check`, the decision as the service's JSON (standard library only)."""
        return self._decide(
            "/v1/decide/event",
            {
                "profile": profile,
                "input": agent_input,
                "output": agent_output,
                "user_facts": user_facts,
                "thread_id": thread_id,
                "idempotency_key": idempotency_key,
            },
        )

    def check_trace(
        self,
        messages: Any = None,
        proposed_call: dict[str, Any] | None = None,
        *,
        trace: Any = None,
        profile: str | None = None,
        consent: list[Any] | None = None,
        user_facts: dict[str, Any] | None = None,
        thread_id: str | None = None,
        idempotency_key: str | None = None,
        task: Any = None,
    ) -> GuardDecision:
        """Decide a proposed tool call (:meth:`check_trace_raw`): the typed decision."""
        return typed(
            self.check_trace_raw(
                messages,
                proposed_call,
                trace=trace,
                profile=profile,
                consent=consent,
                user_facts=user_facts,
                thread_id=thread_id,
                idempotency_key=idempotency_key,
                task=task,
            )
        )

    def check_trace_raw(
        self,
        messages: Any = None,
        proposed_call: dict[str, Any] | None = None,
        *,
        trace: Any = None,
        profile: str | None = None,
        consent: list[Any] | None = None,
        user_facts: dict[str, Any] | None = None,
        thread_id: str | None = None,
        idempotency_key: str | None = None,
        task: Any = None,
    ) -> dict[str, Any]:
        """Decide a proposed tool call from its conversation (the service's `check_trace`).

        The decision as the service's JSON, with the standard library only.

        Give `messages` (and optionally `proposed_call`), or `trace`: the whole JSON of
        `check --trace` (as text or decoded). With a `thread_id` the service keeps the
        thread's index: send the whole conversation each time, it reads only what is new.
        `task` is the thread's task policy (``{"name", "params", "predicates", "rules"}``),
        as `check_trace(task=...)` takes it: the service attaches it, or denies saying why.
        A `trace` given as bytes (a file's) is sent as those bytes (:func:`trace_text`).
        """
        body: dict[str, Any] = {
            "profile": profile,
            "consent": consent,
            "user_facts": user_facts,
            "thread_id": thread_id,
            "idempotency_key": idempotency_key,
            "task": task,
        }
        if isinstance(trace, bytes | bytearray):
            trace = trace_text(bytes(trace))
        if trace is not None:
            body["trace"] = trace
        else:
            body.update(messages=messages, proposed_call=proposed_call)
        return self._decide("/v1/decide/trace", body)

    def thread(self, thread_id: str) -> dict[str, Any]:
        """The thread's decisions, oldest first (``{"decisions": [...], "linear": ...}``)."""
        status, answer = self._failing_over(
            "GET", "/v1/threads/" + urllib.parse.quote(thread_id, safe="")
        )
        if status != 200 or not isinstance(answer, dict):
            raise ServiceError(f"guard service answered {status}: {answer}", status, answer)
        return answer
