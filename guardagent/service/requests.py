"""What a request to the service may say, checked before anything runs.

The caller is the host (on a private network, or holding the service token), so its
structured facts are trusted as the Python API trusts them: the user's facts, the reviewers'
consent records, the thread's task policy (``task``: what ``check_trace(task=...)`` takes,
attached by the guard or denied with the reason), the thread and the idempotency key. It
chooses no deployment setting: a profile is a *registered name* (the built-ins and
``GUARDAGENT_PROFILES``), never a path, and model, memory, limits and keys come from the
service's environment only. The agent's text
(input, output, messages, tool results) is evidence, read by the guard like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from guardagent.service.idempotency import MAX_KEY_CHARS
from guardagent.service.threads import MAX_THREAD_ID_CHARS

EVENT_KEYS = frozenset({"profile", "input", "output", "user_facts", "thread_id", "idempotency_key"})
TRACE_KEYS = frozenset(
    {
        "profile",
        "trace",
        "messages",
        "proposed_call",
        "consent",
        "user_facts",
        "thread_id",
        "idempotency_key",
        "task",
    }
)


class BadRequest(ValueError):
    """A request the service cannot read (answered 400, with this message)."""


@dataclass(frozen=True, kw_only=True)
class Request:
    """One decision request, as read from its JSON body."""

    kind: str
    body: dict[str, Any]
    profile: str | None
    thread_id: str | None
    idempotency_key: str | None
    user_facts: dict[str, Any] | None

    def locks(self) -> list[str]:
        """The lock key of this request: its thread, else its idempotency key, else none.

        A keyed request on a thread needs no lock of its key: two copies of it name the same
        thread (the thread is part of the request), so they take turns on the thread's lock;
        and a run that lost that lock cannot store the key, which is written in the
        transaction that advances the thread's head (and refused if stored meanwhile).
        """
        if self.thread_id is not None:
            return [f"thread:{self.thread_id}"]
        if self.idempotency_key is not None:
            return [f"idempotency_key:{self.idempotency_key}"]
        return []


NULL_MEANS_ABSENT = frozenset(
    {"profile", "user_facts", "thread_id", "idempotency_key", "task", "proposed_call"}
)
"""Keys whose JSON ``null`` the service reads as the key left out: dropped on reading, so a
retry that adds ``"profile": null`` is the same request (its fingerprint too)."""


def checked_id(key: str, value: object, limit: int) -> str:
    """A thread id or idempotency key as every route takes it, or BadRequest naming `key`.

    One rule for every route (the decide routes and ``/v1/threads/{id}``): a non-empty
    string of at most `limit` characters, without a NUL (no Postgres text holds one) or a
    lone surrogate (not UTF-8: no store can write it). Checked before any store sees it, so
    the database never answers with its own error text.

    Raises:
        BadRequest: anything else.
    """
    if (
        not isinstance(value, str)
        or not value
        or len(value) > limit
        or "\x00" in value
        or not value.isascii()
        and not _utf8(value)
    ):
        raise BadRequest(
            f"{key} must be a non-empty string of at most {limit} characters, "
            "without NUL or lone surrogates"
        )
    return value


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _name(body: dict[str, Any], key: str, limit: int) -> str | None:
    value = body.get(key)
    return None if value is None else checked_id(key, value, limit)


def parse_request(kind: str, body: Any) -> Request:
    """Check a decision request's shape (the guard reads the contents).

    Args:
        kind: ``"event"`` or ``"trace"``.
        body: The decoded JSON body.

    Raises:
        BadRequest: a body that is not an object, an unknown or missing key, a wrong type.
    """
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    body = {k: v for k, v in body.items() if not (v is None and k in NULL_MEANS_ABSENT)}
    allowed = EVENT_KEYS if kind == "event" else TRACE_KEYS
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise BadRequest(
            f"unknown key(s) {', '.join(map(repr, unknown))}; a {kind} request "
            f"has {', '.join(sorted(allowed))}"
        )
    if kind == "event":
        for key in ("input", "output"):
            if not isinstance(body.get(key), str):
                raise BadRequest(f"{key} must be a string (the agent's {key})")
    else:
        if ("trace" in body) == ("messages" in body):
            raise BadRequest("give trace (the whole JSON of check --trace) or messages")
        if "proposed_call" in body and "messages" not in body:
            raise BadRequest("proposed_call goes with messages")
        if not isinstance(body.get("consent", []), list):
            raise BadRequest("consent must be a list of the host's review records")
    facts = body.get("user_facts")
    if facts is not None and not isinstance(facts, dict):
        raise BadRequest("user_facts must be a JSON object")
    profile = body.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise BadRequest("profile must be the name of a profile the service serves")
    return Request(
        kind=kind,
        body=body,
        profile=profile,
        user_facts=facts,
        thread_id=_name(body, "thread_id", MAX_THREAD_ID_CHARS),
        idempotency_key=_name(body, "idempotency_key", MAX_KEY_CHARS),
    )
