"""The guard service as a Starlette ASGI app (`guardagent serve` runs it under uvicorn).

=========================  ====================================================================
route                      answer
=========================  ====================================================================
POST /v1/decide/event      ``{profile?, input, output, user_facts?, thread_id?, idempotency_key?}``
                           -> the decision JSON of `guardagent check`
POST /v1/decide/trace      ``{profile?, trace | messages + proposed_call?, consent?, user_facts?,
                           task?, thread_id?, idempotency_key?}`` -> the decision JSON (a
                           task that cannot be attached: a denial saying why)
GET /v1/threads/{id}       the thread's decisions, oldest first, and whether its history is one
                           line
GET /healthz               200 while the process serves
GET /readyz                what works now: ``{status, stateless, threads}``; 200 while
                           stateless decisions work (``degraded``: threads do not), 503 while
                           it starts or drains (SIGTERM); ``?require=threads``: 503 also
                           while threads do not work (:mod:`guardagent.service.readiness`)
=========================  ====================================================================

Decision and thread routes need ``Authorization: Bearer <token>`` when the deployment set
tokens: `GUARDAGENT_SERVICE_TOKEN` (every thread) or one of `GUARDAGENT_SERVICE_TOKENS_FILE`
(its threads and scopes: :mod:`guardagent.service.access`).
Status: 200 a decision (a denial when the thread stayed busy past the lock wait), 400 a request
the service cannot read (an id too: one rule, :func:`checked_id`, on every route), 401 no or
wrong token, 403 a token without the route's scope or the thread's prefix (the same answer
whether the thread exists or not), 408 a body slower than the body time (a head slower than
the header time: :mod:`guardagent.service.connections`), 409 an
idempotency key reused for another request, 413 a body over the limit, 503 a fail-closed
denial with ``Retry-After`` (the service could not decide now: its database, or the request's
deadline, `GUARDAGENT_REQUEST_SECONDS`; :mod:`guardagent.service.outages`). While the replica
drains, every answer closes its connection (``Connection: close``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from guardagent.service.access import Access, Grant
from guardagent.service.decider import Answer, Decider, denial
from guardagent.service.outages import RETRY_AFTER_SECONDS, ServiceUnavailable, within
from guardagent.service.readiness import readiness
from guardagent.service.requests import BadRequest, checked_id, parse_request
from guardagent.service.settings import ServiceSettings
from guardagent.service.stores import open_stores
from guardagent.service.threads import MAX_THREAD_ID_CHARS
from guardagent.surrogates import without_surrogates

log = logging.getLogger("guardagent.service")


def _retry_after(status: int) -> dict[str, str]:
    return {"Retry-After": str(RETRY_AFTER_SECONDS)} if status == 503 else {}


def _json(answer: Answer) -> Response:
    headers = _retry_after(answer.status)
    if answer.replayed:
        headers["Idempotent-Replayed"] = "true"
    # UTF-8 on the wire: an error quoting request text may hold a lone surrogate (U+FFFD)
    body = json.dumps(without_surrogates(answer.body), ensure_ascii=False, separators=(",", ":"))
    return Response(body, status_code=answer.status, headers=headers, media_type="application/json")


_UNAUTHORIZED = {"error": "missing or wrong bearer token"}


def _grant(request: HttpRequest) -> Grant | None:
    gate: Access = request.app.state.access
    return gate.grant(request.headers.get("authorization", ""))


def _forbidden(scope: str) -> Response:
    """The refusal of a thread or route outside the token's grant.

    It names no thread and reads no store: the same answer whether the thread exists or not.
    """
    verb = "decide on" if scope == "decide" else "read"
    return JSONResponse(
        {
            "error": f"this token may not {verb} this thread (its thread prefix "
            "or scopes do not cover it)"
        },
        status_code=403,
    )


async def _body(request: HttpRequest, limit: int, seconds: float) -> Any:
    """The JSON body, read no further than `limit` bytes and for no longer than `seconds`.

    Raises:
        BadRequest: not JSON (or nested too deep to decode).
        OverflowError: a body over the limit.
        TimeoutError: a body that did not arrive in time.
    """
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise OverflowError
    data = bytearray()
    async with asyncio.timeout(seconds):
        async for chunk in request.stream():
            data += chunk
            if len(data) > limit:
                raise OverflowError
    try:
        return json.loads(bytes(data), object_pairs_hook=_keys_once)
    except BadRequest:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"the request body is not JSON: {str(exc)[:200]}") from None


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of the body, refusing a key given twice.

    JSON readers disagree on such an object (one keeps the first value, another the last),
    so a proxy that checked the request could have read another one than the guard.
    """
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:  # linear: one set
            if key in seen:
                raise BadRequest(f"the request body gives the key {key[:60]!r} twice in one object")
            seen.add(key)
    return out


def _decide_route(kind: str) -> Any:
    async def route(request: HttpRequest) -> Response:
        state = request.app.state
        settings: ServiceSettings = state.settings
        grant = _grant(request)
        if grant is None:
            return JSONResponse(_UNAUTHORIZED, status_code=401)
        if "decide" not in grant.scopes:  # before the body is read
            return _forbidden("decide")
        try:
            parsed = parse_request(
                kind, await _body(request, settings.max_request_bytes, settings.body_seconds)
            )
        except BadRequest as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        except TimeoutError:
            return JSONResponse(
                {
                    "error": f"the request body did not arrive within "
                    f"{settings.body_seconds:g} s (GUARDAGENT_BODY_SECONDS)"
                },
                status_code=408,
                headers={"Connection": "close"},
            )
        except OverflowError:
            return JSONResponse(
                {
                    "error": f"request body over {settings.max_request_bytes} "
                    "bytes (GUARDAGENT_MAX_REQUEST_BYTES)"
                },
                status_code=413,
            )
        if not grant.may("decide", parsed.thread_id):
            return _forbidden("decide")
        decider: Decider = state.decider
        scoped = replace(parsed, idempotency_key=grant.key(parsed.idempotency_key))
        try:
            answer = await within(decider.decide(scoped), settings.request_seconds, "the decision")
        except ServiceUnavailable as exc:
            answer = Answer(
                503,
                denial(
                    f"the guard service could not decide now: {exc} (GUARDAGENT_REQUEST_SECONDS)",
                    parsed.profile or "",
                ),
            )
        return _json(answer)

    return route


async def thread_history(request: HttpRequest) -> Response:
    """The decisions of one thread, oldest first."""
    state = request.app.state
    grant = _grant(request)
    if grant is None:
        return JSONResponse(_UNAUTHORIZED, status_code=401)
    try:
        thread_id = checked_id("thread_id", request.path_params["thread_id"], MAX_THREAD_ID_CHARS)
    except BadRequest as exc:
        return JSONResponse({"error": str(exc)}, status_code=400)
    if not grant.may("read", thread_id):
        return _forbidden("read")
    try:
        history = await within(
            state.decider.threads.history(thread_id),
            state.settings.request_seconds,
            "the thread's history",
        )
    except Exception as exc:
        log.exception("thread history failed")
        return JSONResponse(
            {"error": f"{type(exc).__name__}: {exc}"}, status_code=503, headers=_retry_after(503)
        )
    return JSONResponse(history)


async def healthz(request: HttpRequest) -> Response:
    """Liveness: the process answers."""
    return JSONResponse({"status": "ok"})


async def readyz(request: HttpRequest) -> Response:
    """Readiness: what works now (:func:`~guardagent.service.readiness.readiness`)."""
    state = request.app.state
    require = request.query_params.get("require", "stateless")
    if require not in ("stateless", "threads"):
        return JSONResponse({"error": "require is stateless or threads"}, status_code=400)
    probe = getattr(state, "probe", None)
    status, body = readiness(
        warm=getattr(state, "ready", False),
        draining=getattr(state, "draining", False),
        threads=probe.threads() if probe is not None else "down",
        require_threads=require == "threads",
    )
    return JSONResponse(body, status_code=status)


class _CloseWhileDraining:
    """Every answer given while the replica drains closes its connection.

    A load balancer (or a client) keeps its connections to a replica open and reuses them;
    if the replica only stopped answering `/readyz` they would still carry requests until
    the replica closes them, cutting whatever is sent then. Closed after each answer during
    the drain, they are opened again elsewhere.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing(message: Any) -> None:
            if message["type"] == "http.response.start" and getattr(
                scope["app"].state, "draining", False
            ):
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"
                ]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, receive, closing)


def create_app(settings: ServiceSettings | None = None) -> Starlette:
    """The service app; `settings` default to the environment's (read when it starts)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.settings = settings or ServiceSettings.from_env()
        app.state.access = Access(
            app.state.settings.service_token, app.state.settings.service_tokens
        )
        async with AsyncExitStack() as stack:
            stores = await stack.enter_async_context(open_stores(app.state.settings))
            decider = Decider(app.state.settings, stores.locks, stores.decisions, stores.threads)
            await decider.agent(decider.profile_ref(None))  # warm: the first request pays nothing
            app.state.decider, app.state.probe = decider, stores.probe
            app.state.ready = True
            log.info(
                "guard service ready (database: %s)",
                "postgres" if app.state.settings.database_url else "in-process",
            )
            try:
                yield
            finally:
                app.state.ready = False

    routes = [
        Route("/v1/decide/event", _decide_route("event"), methods=["POST"]),
        Route("/v1/decide/trace", _decide_route("trace"), methods=["POST"]),
        Route("/v1/threads/{thread_id:path}", thread_history, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
    return Starlette(routes=routes, lifespan=lifespan, middleware=[Middleware(_CloseWhileDraining)])
