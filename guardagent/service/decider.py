"""One decision request, start to finish: locks, the stored decision, the thread, the guard.

```
request -> (no thread, no key) -> guard -> decision
        -> lock key + thread (bounded wait; past it: denied, not stored)
           -> key decided before?  same request: the stored decision; other request: 409
              (also found on the thread, when an older replica died between the two writes)
           -> thread's head and trace index -> guard
           -> one transaction: append as the head's child, advance the head, store the key
              (head moved or key stored meanwhile: nothing written; read and decide again,
              at most ATTEMPTS times, then denied 503)
```
Anything that goes wrong on the way denies with the reason (fail closed); only a decision
the guard made is stored or appended, and only both together.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, fields
from typing import Any

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.nodes.runtime import registered_profiles
from guardagent.service.client import trace_bytes
from guardagent.service.consent import consent_problem
from guardagent.service.heads import NEW_THREAD, WriteRefused
from guardagent.service.idempotency import (
    Confirm,
    Decisions,
    KeyReused,
    Stored,
    check_reuse,
    fingerprint,
)
from guardagent.service.locks import LockBusy, Locks
from guardagent.service.outages import ServiceUnavailable
from guardagent.service.requests import BadRequest, Request
from guardagent.service.settings import ServiceSettings
from guardagent.service.threads import KeyWrite, ThreadState, ThreadStore

log = logging.getLogger("guardagent.service")

ATTEMPTS = 3
"""Runs of one request whose write may be refused (its thread moved on) before it is denied."""


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, JSON body, and whether it is a stored decision replayed."""

    status: int
    body: dict[str, Any]
    replayed: bool = False


def denial(reason: str, profile: str = "") -> dict[str, Any]:
    """A fail-closed denial in the decision's JSON shape (the service could not decide)."""
    return GuardDecision(
        allowed=False, label=1, reason=f"denied: {reason}", error=reason, profile=profile
    ).model_dump(mode="json")


class Decider:
    """The guards of the registered profiles and the stores every decision goes through."""

    def __init__(
        self, settings: ServiceSettings, locks: Locks, decisions: Decisions, threads: ThreadStore
    ) -> None:
        self.settings = settings
        self.locks = locks
        self.decisions = decisions
        self.threads = threads
        self.profiles = registered_profiles(settings.guard)
        self._agents: dict[str, GuardAgent] = {}
        self._builds: dict[str, asyncio.Future[GuardAgent]] = {}

    def profile_ref(self, name: str | None) -> str:
        """What to load for a requested profile name (None: the deployment's default).

        Raises:
            BadRequest: a name the deployment does not serve (paths are never names).
        """
        if name is None:
            return self.settings.guard.profile
        if name not in self.profiles:
            raise BadRequest(
                f"profile {name[:80]!r} is not served here; choose one of: "
                f"{', '.join(sorted(self.profiles))}"
            )
        return self.profiles[name]

    def _build(self, ref: str) -> GuardAgent:
        guard = self.settings.guard
        values = {f.name: getattr(guard, f.name) for f in fields(guard)}
        values.update(profile=ref, user_facts=None, trace_assignments=None)
        agent = GuardAgent(**values)
        agent.warm_up()
        return agent

    async def agent(self, ref: str) -> GuardAgent:
        """The guard of profile `ref`, built (and its memory opened) on first use.

        One build per profile, whoever waits for it: a request that gives up (its deadline)
        leaves the build to finish, and the next request finds the guard built. A build
        that fails is tried again by the next request.
        """
        if ref in self._agents:
            return self._agents[ref]
        build = self._builds.get(ref)
        if build is None:
            build = self._builds[ref] = asyncio.ensure_future(asyncio.to_thread(self._build, ref))
            build.add_done_callback(lambda done: self._built(ref, done))
        return await asyncio.shield(build)

    def _built(self, ref: str, build: asyncio.Future[GuardAgent]) -> None:
        self._builds.pop(ref, None)
        if not build.cancelled() and build.exception() is None:
            self._agents[ref] = build.result()

    async def _run(
        self,
        request: Request,
        trace_state: dict[str, Any] | None,
    ) -> GuardDecision:
        agent = await self.agent(self.profile_ref(request.profile))
        body = request.body
        try:
            if request.kind == "event":
                return await agent.acheck(
                    body["input"], body["output"], user_facts=request.user_facts
                )
            if "consent" in body:  # as `check --consent` takes them: signed, or refused
                problem = consent_problem(body["consent"], agent.context.trace_key_bytes)
                if problem:
                    raise BadRequest(f"consent: {problem}")
            trace = body.get("trace")
            if isinstance(trace, str):  # the bytes it stands for: read (and sized) as bytes
                trace = trace_bytes(trace)
            args = (
                (trace, None) if "trace" in body else (body["messages"], body.get("proposed_call"))
            )
            decision = await agent.acheck_trace(
                *args,
                user_facts=request.user_facts,
                consent=body.get("consent") or [],
                thread_state=trace_state,
                thread_id=request.thread_id,
                task=body.get("task"),
            )
        except ValueError as exc:  # the caller's facts (an event's)
            raise BadRequest(str(exc)) from None
        if any(u.get("reason") == "no_trace_policy" for u in decision.unreadable or ()):
            raise BadRequest(str(decision.unreadable[0]["detail"]))  # the request's profile
        return decision

    async def decide(self, request: Request) -> Answer:
        """Decide `request`: never raises; every failure is a denial with its reason."""
        profile = request.profile or ""
        try:
            if not request.locks():
                decision = await self._run(request, None)
                return Answer(200, decision.model_dump(mode="json"))
            return await self._decide_locked(request)
        except BadRequest as exc:
            return Answer(400, {"error": str(exc)})
        except KeyReused as exc:
            return Answer(409, {"error": str(exc)})
        except LockBusy as exc:
            return Answer(200, denial(str(exc), profile))
        except ServiceUnavailable as exc:  # its database or the deadline: retry (same key)
            return Answer(503, denial(f"the guard service could not decide now: {exc}", profile))
        except WriteRefused as exc:  # not decided: the host may retry it (same key)
            return Answer(
                503, denial(f"{exc}; decided {ATTEMPTS} times, each write refused", profile)
            )
        except Exception as exc:  # the database, the memory, a bug: deny, say why, log
            log.exception("decision failed")
            return Answer(
                503,
                denial(f"the guard service could not decide: {type(exc).__name__}: {exc}", profile),
            )

    def _canonical(self, request: Request) -> dict[str, Any]:
        """The body as fingerprinted: the profile as loaded, the default's left out.

        Naming the default profile, or leaving it out, asks for the same decision, so a
        retry that names it is the same request (and a request without a profile keeps the
        fingerprint it always had: keys stored before still match).
        """
        body = {k: v for k, v in request.body.items() if k != "profile"}
        loaded = self.profile_ref(request.profile)
        if loaded != self.profile_ref(None):
            body["profile"] = loaded
        return body

    async def _decide_locked(self, request: Request) -> Answer:
        """Decide under the locks; a refused write (the thread moved on) reads and decides again.

        A write is refused when its thread's head is not the one the run read, or its key was
        stored meanwhile: another replica wrote while this one decided (it lost its lock, or
        its lock session died). Nothing of the run was written, and its answer not sent, so
        running it again on what is there now is safe.
        """
        attempt = 1
        while True:
            try:
                return await self._decide_once(request)
            except WriteRefused as exc:
                if attempt >= ATTEMPTS:
                    raise
                log.warning("write refused, deciding again (%d/%d): %s", attempt, ATTEMPTS, exc)
                attempt += 1

    def _key_writer(self, key: str, stored: Stored) -> KeyWrite:
        """The key's write, for the transaction that records its decision."""

        async def write(conn: Any) -> Confirm:
            return await self.decisions.put(conn, key, stored)

        return write

    async def _decide_once(self, request: Request) -> Answer:
        fp = fingerprint(request.kind, self._canonical(request))
        key, thread = request.idempotency_key, request.thread_id
        mark = None if key is None else {"key": key, "fingerprint": fp}
        async with self.locks.hold(request.locks()) as turn:
            session = turn.conn
            head, last = NEW_THREAD, ThreadState()
            if thread is not None:  # an event too: its checkpoint keeps the thread's index
                # a lock handed on unbroken comes with the head its last run wrote: no read
                head, last = await self.threads.last(thread, turn.baton.get(thread), session)
            if key is not None:
                stored = await self.decisions.get(session, key)
                if stored is None and last.get("request") == mark and "decision" in last:
                    # decided and appended by an older replica that died before storing the key
                    stored = Stored(fp, last["decision"])
                    (await self.decisions.put(session, key, stored))()
                stored = check_reuse(key, stored, fp)
                if stored is not None:
                    return Answer(200, stored.body, replayed=True)
            state = last.get("trace_state") if request.kind == "trace" else None
            decision = await self._run(request, state)
            body = decision.model_dump(mode="json")
            also = None if key is None else self._key_writer(key, Stored(fp, body))
            if thread is not None or also is not None:
                new = await self.threads.append(
                    thread, head, request.kind, body, decision.trace_state, mark, also, parent=last
                )
                if thread is not None:  # committed: the next run of this hold starts there
                    turn.baton[thread] = new
            return Answer(200, body)
