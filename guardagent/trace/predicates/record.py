"""Consent records: a reviewer's decision on a call, recorded and signed by the host."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from guardagent.trace.predicates.fact import PredicateSpecError
from guardagent.trace.thread.state import sign

Decision = Literal["approve", "edit", "reject"]


@dataclass(frozen=True)
class Consent:
    """A reviewer's decision on a call, recorded by the host (never read from messages).

    An approval is one approval of one call: it counts only in its `thread`, only for the
    call `call_id` names (a call without an id is not that call), and only `uses` times
    (the thread's signed state counts the uses, :mod:`~guardagent.trace.predicates.ledger`).

    Attributes:
        tool: The tool the decision is about.
        decision: ``approve``, ``edit`` (the edited call is approved) or ``reject``.
        args: The exact arguments decided on (None: any arguments of the tool).
        values: Specific argument values decided on (``{"to": "x@y.com"}``), when the
            review was about them rather than the whole call.
        call_id: The call the review was about (then only that call, and never a call
            without an id).
        thread: The thread the review happened in: an approval without one, or from
            another thread, approves nothing (a rejection without one counts everywhere).
        uses: How many calls the approval may let through (default 1).
    """

    tool: str
    decision: Decision = "approve"
    args: Mapping[str, Any] | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    thread: str | None = None
    uses: int = 1

    def signed(self, key: bytes) -> dict[str, Any]:
        """The record as JSON, signed with the deployment's key (see :class:`TraceFacts`)."""
        data = self.to_json()
        data["mac"] = sign(data, key)
        return data

    def identity(self) -> str:
        """What the thread's state counts uses under: a digest of the record's content."""
        return "r:" + hashlib.sha256(canon(self.to_json()).encode("utf-8")).hexdigest()[:32]

    @classmethod
    def from_json(cls, raw: Any) -> Consent:
        """Read a record (``{tool, decision, args, values, call_id, thread, uses}``).

        Raises:
            PredicateSpecError: a field missing, of the wrong type, or unknown (a record is
                refused whole rather than read more widely than the host wrote it).
        """
        if isinstance(raw, Consent):
            return raw
        if not isinstance(raw, Mapping) or not isinstance(raw.get("tool"), str):
            raise PredicateSpecError("a consent record needs a 'tool'")
        unknown = sorted(str(k)[:40] for k in raw if k not in FIELDS)
        if unknown:  # a field meant to narrow the approval, ignored, would widen it
            raise PredicateSpecError(
                f"a consent record has unknown field(s) {unknown} (it has {', '.join(FIELDS)})"
            )
        decision = raw.get("decision", "approve")
        if decision not in ("approve", "edit", "reject"):
            raise PredicateSpecError(
                f"consent decision must be approve, edit or reject, not {decision!r}"
            )
        args, values = raw.get("args"), raw.get("values") or {}
        if (args is not None and not isinstance(args, Mapping)) or not isinstance(values, Mapping):
            raise PredicateSpecError("consent args and values must be mappings")
        thread, uses = raw.get("thread"), raw.get("uses", 1)
        if thread is not None and not isinstance(thread, str):
            raise PredicateSpecError("a consent record's thread must be a string")
        if type(uses) is not int or uses < 1:
            raise PredicateSpecError(
                f"a consent record's uses must be a positive integer, not {uses!r}"
            )
        call_id = raw.get("call_id")
        if call_id is not None and not (isinstance(call_id, str) and call_id):
            raise PredicateSpecError(
                f"a consent record's call_id must be a non-empty string "
                f"or null, not {call_id!r:.40}"
            )
        return cls(
            raw["tool"],
            decision,
            dict(args) if args is not None else None,
            dict(values),
            call_id,
            thread or None,
            uses,
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (for a checkpoint)."""
        return {
            "tool": self.tool,
            "decision": self.decision,
            "args": self.args,
            "values": dict(self.values),
            "call_id": self.call_id,
            "thread": self.thread,
            "uses": self.uses,
        }


FIELDS = ("tool", "decision", "args", "values", "call_id", "thread", "uses", "mac")
"""Every field a consent record may have (``mac``: its signature)."""


def canon(value: Any) -> str:
    """One JSON spelling of a value, so equal arguments compare equal."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
