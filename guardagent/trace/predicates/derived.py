"""Derived from a source the user designated: the value is in a document the user pointed at.

"Pay the invoice in the file I named", "add the person whose address is on the page I
linked": the IBAN or the address is in no user message, only in the result of a call
(``read_file("invoice-0425.txt")``) whose own arguments the user gave. Such a value is
*derived from a designated source*, within `hops` calls:

- hop 0: the value itself is from the user, the system prompt, a trusted tool or the
  user's records (:mod:`guardagent.trace.records`);
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
  nothing (:mod:`guardagent.trace.resources`): it returns what the agent wrote there.

A designating argument must be *specific*: an address, a URL, an IBAN, a phone number, or
a phrase of two or more words or with a digit (``invoice-0425.txt``). "Summarise my last
10 unread mails" names the folder ``unread`` and a count, not any one message: the inbox
it returns is not a document the user pointed at, so an IBAN in one of its mails is not
derived from the user. The rule is a heuristic over words; ``via=`` (the tools that read
one document: ``via="read_file"``) is the policy's own, stronger say.

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

from guardagent.trace.messages import ToolCall
from guardagent.trace.predicates.designation import requested, written_as_read
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.provenance import (
    INNER_KINDS,
    describe,
    in_records,
    select_values,
    trail,
)
from guardagent.trace.predicates.trails import designated
from guardagent.trace.provenance import CallProvenance, SourceRef, ValueProvenance, call_provenance
from guardagent.trace.resources import Writes
from guardagent.trace.state import flatten
from guardagent.trace.temporal import CallPattern, matches

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


def _direct(facts: TraceFacts, value: ValueProvenance, before: int,
            raw: Any = _NOT_GIVEN) -> Chain | None:  # fmt: skip
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


Via = tuple[CallPattern, ...] | None


def via_patterns(raw: Any) -> Via:
    """Read `via=`: None (any call), a call pattern, or a list of them."""
    if raw is None:
        return None
    specs = raw if isinstance(raw, list | tuple) else [raw]
    if not specs:
        raise PredicateSpecError("via needs at least one call pattern")
    return tuple(CallPattern.of(spec) for spec in specs)


def derivation(facts: TraceFacts, value: ValueProvenance, before: int, hops: int,
               via: Via = None, raw: Any = _NOT_GIVEN, names: bool = False,
               ) -> Chain | None:  # fmt: skip
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


def designated_documents(facts: TraceFacts, value: ValueProvenance, before: int, hops: int,
                         via: Via = None, names: bool = False,
                         ) -> Iterator[tuple[SourceRef, ToolCall, Chain]]:  # fmt: skip
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


def designated_call(facts: TraceFacts, call: ToolCall, hops: int,
                    via: Via = None, names: bool = False) -> Chain | None:  # fmt: skip
    """Whether the user pointed at an earlier call: its arguments designated within `hops`."""
    key = ("designated", call.position, hops, None if via is None else tuple(map(str, via)),
           names)  # fmt: skip
    if key in facts.memo:
        return facts.memo[key]  # type: ignore[no-any-return]
    label = facts.labels.label(call.name)
    if not label.other_args and any(name not in (label.args or ()) for name in call.args):
        facts.memo[key] = None  # an argument no rule reads may say which document it was
        return None
    writer = _writes(facts).writer(call)
    if writer is not None:  # it returns what the agent wrote there, not the user's document
        facts.memo.setdefault(("designation_note", call.index), f"it reads what `{writer.name}` "
                              f"in message {writer.index} wrote into the same resource")
        facts.memo[key] = None
        return None
    values = [v for v in _of_call(facts, call).values
              if not v.inner or v.value.kind in INNER_KINDS]  # fmt: skip
    scalars = dict(flatten(call.args))
    found: Chain | None = None
    for value in values:
        chain = derivation(facts, value, call.index, hops, via, scalars.get(value.path), names)
        if chain is not None and not specific(value, names):
            continue  # names a collection (a folder, a search word), not one document
        if chain is None and any(s.index < call.index and s.kind == "untrusted_tool"
                                 for s in value.sources):  # fmt: skip
            found = None  # an argument an untrusted message chose spoils the call
            break
        if chain is not None and found is None:
            found = (f"`{_short(value.value.text)}`, {chain[0]}", chain[1])
    facts.memo[key] = found
    return found


@predicate
def arg_from_designated(facts: TraceFacts, arg: str, hops: int = 1, via: Any = None,
                        kinds: Any = None, part: Any = None, names: bool = False,
                        ) -> Fact:  # fmt: skip
    """Every value of the argument derives from a source the user designated (module doc)."""
    values = select_values(facts, arg, kinds, part)
    if not values:
        what = ("names no recipient to trace" if arg == "@recipients"
                else f"has no value in argument {arg!r}")  # fmt: skip
        return Fact("arg_from_designated", None, (), f"{facts.trace.call.name!r} {what}")
    before = len(facts.trace.messages) + 1  # every message is before the proposed call
    patterns = via_patterns(via)
    chains = [(v, derivation(facts, v, before, int(hops), patterns, names=bool(names)))
              for v in values]  # fmt: skip
    failed = [v for v, c in chains if c is None]
    if failed:
        sources = tuple(dict.fromkeys(s for v in failed for s in v.sources))
        detail = "; ".join(f"{describe(facts, v)}, and not from a call the user pointed at "
                           f"(within {hops} hop(s))" for v in failed[:3])  # fmt: skip
        notes = _notes(facts, sources)
        if notes:
            detail += " (" + "; ".join(notes[:3]) + ")"
        return Fact("arg_from_designated", False, sources, detail,
                    tuple(trail(facts, v) for v in failed[:3]))  # fmt: skip
    shown = []
    sources_list: list[SourceRef] = []
    trails = []
    for v, chain in chains[:5]:
        assert chain is not None
        sources_list.extend(chain[1])
        documented = chain[0].startswith("which is from ")  # else the user, trusted, records
        trails.append(designated(facts, v, chain[1]) if documented else trail(facts, v))
        if chain[0].startswith("which is from "):
            shown.append(f"{v.path} {_short(v.value.text)!r} is "
                         f"{chain[0].removeprefix('which is ')}")  # fmt: skip
        else:
            shown.append(describe(facts, v))
    return Fact("arg_from_designated", True, tuple(dict.fromkeys(sources_list)), "; ".join(shown),
                tuple(trails))


def _notes(facts: TraceFacts, sources: tuple[SourceRef, ...]) -> list[str]:
    """Why the calls whose results hold the values designate nothing, where it was noted."""
    notes: list[str] = []
    for ref in sources:
        call = facts.trace.call_of(facts.trace.messages[ref.index])
        note = None if call is None else facts.memo.get(("designation_note", call.index))
        if note is not None and note not in notes:
            notes.append(f"`{call.name}`: {note}" if call is not None else note)
    return notes


@checks("arg_from_designated")
def _check_designated(given: dict[str, Any]) -> None:
    hops = given["hops"]
    if isinstance(hops, bool) or not isinstance(hops, int) or not 0 <= hops <= MAX_HOPS:
        raise PredicateSpecError(f"hops must be a whole number from 0 to {MAX_HOPS}, not {hops!r}")
    if not isinstance(given["arg"], str) or not given["arg"]:
        raise PredicateSpecError("arg must be an argument name, a path, '*' or '@recipients'")
    via_patterns(given["via"])
    if not isinstance(given.get("names", False), bool):
        raise PredicateSpecError("names must be true or false")
