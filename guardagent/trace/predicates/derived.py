"""Derived from a source the user designated: the value is in a document the user pointed at.

"Pay the invoice in the file I named", "add the person whose address is on the page I
linked": the IBAN or the address is in no user message, only in the result of a call
(``read_file("invoice-0425.txt")``) whose own arguments the user gave. Such a value is
*derived from a designated source*, within `hops` calls:

- hop 0: the value itself is from the user, the system prompt, a trusted tool or the
  user's records (:mod:`guardagent.trace.sources.records`);
- hop k: the value is in the result of an earlier call C (the result of C, echoes of C's
  own arguments left out; with ``via=``, only calls matching that call pattern, or one of
  that list of patterns) whose
  arguments are *designated* at hop k-1: at least one of them is, and none is found only
  in untrusted messages (a value the model made up, such as ``page=1``, neither
  designates nor spoils). Only messages before C count for C's arguments. A call with an
  argument its label does not declare (``read_file(path=..., root=...)``, unless
  ``other_args: allow``) designates nothing: the tool may have read another document.
- a user message designates an argument only where it *asks* for it, naming it as the tool
  reads it (:mod:`.designation`): "do NOT open invoice-9999.txt" or "is it a scam?" does
  not, nor ``Invoice-0425.txt`` when the user wrote ``invoice-0425.txt``;
- a call that reads a resource an earlier writing call of the agent named designates
  nothing (:mod:`guardagent.trace.sources.resources`): it returns what the agent wrote there;
- with ``names=True``, a one-word name designates only where the user wrote it as a name
  ("in general", "the general channel", "#general"), not as a common noun of the request
  ("the article Bob posted": :mod:`.proper_names`).

A designating argument must be *specific*: an address, a URL, an IBAN, a phone number, a
phrase of two or more words or with a digit (``invoice-0425.txt``), or a one-word name the
user's request writes beside a singular noun of its tool's or argument's name ("the
'general' channel", "Alice's inbox": :mod:`.kind_names`). "Summarise my last
10 unread mails" names the folder ``unread`` and a count, not any one message: the inbox
it returns is not a document the user pointed at, so an IBAN in one of its mails is not
derived from the user. The rule is a heuristic over words; ``via=`` (the tools that read
one document: ``via="read_file"``) is the policy's own, stronger say.

The predicate ``arg_from_designated`` (in :mod:`.document`) asks one thing more by default:
a value the designated document writes only inside text addressed to the agent is what the
document *told the agent*, not what it states (``arg_designated_unaddressed``); a policy
opts back in to such values with ``addressed=True``.

The decision names the chain: "iban 'CH93...' is from `read_file` of `invoice-0425.txt`,
which the user named in message 1" (the result message among the fact's sources).

Residual risk. Whoever can write into the designated document chooses the value: an
attacker who sends the user an invoice with their own IBAN gets paid when the user says
"pay the invoice I forwarded". A policy bounds it with the other predicates: an amount limit
(``arg_compare("amount", "<=", 500)``), the user's consent above it (``consent_given()``),
recipients from the user's records for anything larger.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.predicates.designation import named_as_name, requested, written_as_read
from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.predicates.fact import PredicateSpecError
from guardagent.trace.predicates.kind_names import named_beside_noun
from guardagent.trace.predicates.provenance import INNER_KINDS, in_records
from guardagent.trace.sources.provenance import (
    CallProvenance,
    SourceRef,
    ValueProvenance,
    call_provenance,
)
from guardagent.trace.sources.resources import Writes
from guardagent.trace.sources.temporal import CallPattern, matches
from guardagent.trace.thread.state import flatten

MAX_HOPS = 5
"""The most hops a policy may allow (each hop is one more document chosen by a document)."""

Chain = tuple[str, tuple[SourceRef, ...]]
"""A derivation: the phrase that explains it, and the messages on the way."""


def _writes(facts: TraceFacts) -> Writes:
    found = facts.memo.get(("writes",))
    if found is None:
        found = facts.memo[("writes",)] = Writes(facts.trace, facts.labels)
    return found


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:60] + "..."


def _of_call(facts: TraceFacts, call: ToolCall) -> CallProvenance:
    key = ("call_provenance", call.position)
    found = facts.memo.get(key)
    if found is None:
        found = facts.memo[key] = call_provenance(facts.search, call)
    return found


_NOT_GIVEN: Any = object()


def _direct(
    facts: TraceFacts, value: ValueProvenance, before: int, raw: Any = _NOT_GIVEN
) -> Chain | None:
    """The value's trusted source among the messages before `before` (or the records).

    With `raw` (the argument's scalar: the value designates a call), a user message counts
    only where it asks for the value as the tool reads it (:mod:`.designation`).
    """
    refs = [s for s in value.sources if s.index < before]
    user = [s for s in refs if s.kind == "user"]
    if raw is not _NOT_GIVEN:  # (a value the user spoke against never gets here)
        asked, why, _ = requested(facts, value, raw, before)
        if asked is not None:
            return f"which the user named in message {asked.index}", (asked,)
        if user:
            facts.memo.setdefault(("designation_note", before), why)
        user = []
    if user:
        return f"which the user named in message {user[0].index}", (user[0],)
    trusted = [s for s in refs if s.kind in ("system", "trusted_tool")]
    if raw is not _NOT_GIVEN:
        trusted = [s for s in trusted if written_as_read(facts, s.index, value, raw)]
    if trusted:
        return f"which {trusted[0]} holds (a trusted source)", (trusted[0],)
    sections = in_records(facts, value)
    if sections:
        return f"which is in the user's records: {sections[0].describe()}", ()
    return None


def specific(value: ValueProvenance, names: bool = False) -> bool:
    """Whether a value names one thing (an address, a URL, two words, a digit in a phrase).

    A number or a date counts or filters ("my last 10 mails", "since May 1st"): it picks
    no one document. With `names` (the policy's opt-in), a one-word name also names one
    thing: the channel ``general``, the inbox ``alice`` (its messages are the document).
    """
    kind = value.value.kind
    if kind in ("amount", "date"):
        return False
    if kind != "text":
        return True
    toks = value.value.tokens
    return len(toks) >= 2 or any(c.isdigit() for t in toks for c in t) or (names and len(toks) == 1)


def _beside_noun(
    facts: TraceFacts, call: ToolCall, value: ValueProvenance, raw: Any, chain: Chain
) -> bool:
    """A one-word name the user asked for beside its tool's noun ("the general channel")."""
    asked = chain[1][0] if chain[1] else None
    return (
        asked is not None
        and asked.kind == "user"
        and named_beside_noun(facts, call, value, raw, asked.index)
    )


Via = tuple[CallPattern, ...] | None


def via_patterns(raw: Any) -> Via:
    """Read `via=`: None (any call), a call pattern, or a list of them."""
    if raw is None:
        return None
    specs = raw if isinstance(raw, list | tuple) else [raw]
    if not specs:
        raise PredicateSpecError("via needs at least one call pattern")
    return tuple(CallPattern.of(spec) for spec in specs)


def derivation(
    facts: TraceFacts,
    value: ValueProvenance,
    before: int,
    hops: int,
    via: Via = None,
    raw: Any = _NOT_GIVEN,
    names: bool = False,
) -> Chain | None:
    """How a value derives from a designated source within `hops` (None: it does not).

    `raw`, for an argument of a call whose result is judged: its scalar as given, which a
    user message must ask for as written (see :func:`_direct`).
    """
    if raw is not _NOT_GIVEN:
        _, why, vetoed = requested(facts, value, raw, before)
        if vetoed:  # the user spoke against it: no document designates it either
            facts.memo.setdefault(("designation_note", before), why)
            return None
    direct = _direct(facts, value, before, raw)
    if direct is not None or hops <= 0:
        return direct
    for ref, call, (phrase, refs) in designated_documents(facts, value, before, hops, via, names):
        return f"which is from `{call.name}` of {phrase}", (ref, *refs)
    return None


def designated_documents(
    facts: TraceFacts,
    value: ValueProvenance,
    before: int,
    hops: int,
    via: Via = None,
    names: bool = False,
) -> Iterator[tuple[SourceRef, ToolCall, Chain]]:
    """Each result before `before` holding the value, of a call the user pointed at (`hops`).

    In the order of the value's sources: :func:`derivation` takes the first, the document
    predicates (:mod:`.document`) judge every one.
    """
    if hops <= 0:
        return
    for ref in value.sources:
        if ref.index >= before or ref.kind not in ("trusted_tool", "untrusted_tool"):
            continue
        call = facts.trace.call_of(facts.trace.messages[ref.index])
        if call is None or call.index >= ref.index:
            continue
        if via is not None and not any(matches(call, p, facts.trace, facts.labels) for p in via):
            continue
        designated = designated_call(facts, call, hops - 1, via, names)
        if designated is not None:
            yield ref, call, designated


def designated_call(
    facts: TraceFacts, call: ToolCall, hops: int, via: Via = None, names: bool = False
) -> Chain | None:
    """Whether the user pointed at an earlier call: its arguments designated within `hops`."""
    key = ("designated", call.position, hops, None if via is None else tuple(map(str, via)), names)
    if key in facts.memo:
        return facts.memo[key]  # type: ignore[no-any-return]
    label = facts.labels.label(call.name)
    if not label.other_args and any(name not in (label.args or ()) for name in call.args):
        facts.memo[key] = None  # an argument no rule reads may say which document it was
        return None
    writes = _writes(facts)
    writer = writes.writer(call)
    if writer is not None:  # it returns what the agent wrote there, not the user's document
        unread = writes.unread(writer)
        facts.memo.setdefault(
            ("designation_note", call.index),
            f"it reads what `{writer.name}` in message {writer.index} wrote into the same resource"
            if unread is None
            else f"`{writer.name}` in message "
            f"{writer.index} may have written any resource ({unread})",
        )
        facts.memo[key] = None
        return None
    values = [v for v in _of_call(facts, call).values if not v.inner or v.value.kind in INNER_KINDS]
    scalars = dict(flatten(call.args))
    found: Chain | None = None
    for value in values:
        chain = derivation(facts, value, call.index, hops, via, scalars.get(value.path), names)
        if (
            chain is not None
            and not specific(value, names)
            and not _beside_noun(facts, call, value, scalars.get(value.path), chain)
        ):
            continue  # names a collection (a folder, a search word), not one document
        if (
            chain is not None
            and not specific(value)
            and chain[1]
            and chain[1][0].kind == "user"
            and not named_as_name(facts, chain[1][0].index, value, scalars.get(value.path))
        ):
            facts.memo.setdefault(
                ("designation_note", call.index),
                f"the user wrote "
                f"{value.value.text!r} as a common noun of the request, not "
                "as a name (write #name or 'the name channel')",
            )
            continue  # names=True: "the article", not the channel `article`
        if chain is None and any(
            s.index < call.index and s.kind == "untrusted_tool" for s in value.sources
        ):
            found = None  # an argument an untrusted message chose spoils the call
            break
        if chain is not None and found is None:
            found = (f"`{_short(value.value.text)}`, {chain[0]}", chain[1])
    facts.memo[key] = found
    return found
