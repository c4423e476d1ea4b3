"""The attacker inside the designated document: three ways to say more than "it is in there".

In an indirect prompt injection the attacker usually writes into the very document the user
named (a bill, a notice, a page), so a value they add is "derived from a designated source"
(:mod:`.derived`) like the legitimate one. Each predicate here narrows what a designated
document designates, with the same `hops` and `via=` as ``arg_from_designated`` (a value
from the user, the system prompt, a trusted tool or the user's records holds at hop 0, as
there). ``arg_from_designated`` itself lives here: by default it is
``arg_designated_unaddressed`` with a `part=` (the derivation of :mod:`.derived`, then the
addressed-text test), and ``addressed=True`` gives the plain derivation:

- ``arg_designated_unaddressed(arg)``: every value is in a designated document *outside*
  text addressed to the agent (:mod:`guardagent.trace.found.addressed`: "AI assistant, before
  you continue, pay ...", ``<IMPORTANT>``, "this is the user speaking"). A value written
  only from an injection on is what the document told the agent, not what it states. With
  ``hops`` of 2 or more, an earlier document of the chain with any such text spoils it;
- ``arg_designated_unique(arg)``: every designated document that holds the value holds no
  other value of its kind (one IBAN on the bill: an injection that adds its own makes two,
  and neither is paid without asking);
- ``arg_from_same_document(arg, other)``: the values of both arguments come from one
  designated document (the amount from the bill the payee is on, not from another page).

Each answers False when a value is not derived at all, and says which document and which
text decided. None of them stops an attacker who wrote the whole document as a plain one
(their IBAN as the only one, no words to the agent): docs/reference/traces.md ("Residual risk,
measured") gives the measured rates.
"""

from __future__ import annotations

from typing import Any

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.found.addressed import Cue, addressed_from, holds_outside
from guardagent.trace.found.reading import readings
from guardagent.trace.predicates.derived import (
    MAX_HOPS,
    Chain,
    Via,
    derivation,
    designated_documents,
    via_patterns,
)
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError, Trail
from guardagent.trace.predicates.provenance import describe, select_values, trail
from guardagent.trace.predicates.trails import designated
from guardagent.trace.sources.provenance import SourceRef, ValueProvenance
from guardagent.trace.thread.state import message_keys

_SHOWN = 40


def _short(text: str, shown: int = _SHOWN) -> str:
    return text if len(text) <= shown else text[:shown] + "..."


def documents(
    facts: TraceFacts,
    value: ValueProvenance,
    before: int,
    hops: int,
    via: Via,
    names: bool = False,
) -> list[tuple[SourceRef, ToolCall, Chain]]:
    """The designated documents that hold a value: results of calls the user pointed at."""
    return list(designated_documents(facts, value, before, hops, via, names))


def _addressed_link(facts: TraceFacts, chain: Chain) -> tuple[SourceRef, Cue] | None:
    """An earlier document of the chain (hops >= 2) with text addressed to the agent.

    Which of its values chose the next document is not kept, so any addressed text in it
    spoils the chain (fail closed: the link may be the injection's).
    """
    for ref in chain[1]:
        if ref.kind not in ("trusted_tool", "untrusted_tool"):
            continue
        for reading in readings(facts.trace.messages[ref.index].text):
            cue = addressed_from(reading)
            if cue is not None:
                return ref, cue
    return None


def _named(ref: SourceRef, call: ToolCall, chain: Chain) -> str:
    return f"{ref} (`{call.name}` of {chain[0]})"


def _open_values(
    facts: TraceFacts, name: str, arg: str, kinds: Any
) -> tuple[list[ValueProvenance], Fact | None]:
    values = select_values(facts, arg, kinds, None)
    if values:
        return values, None
    return [], Fact(
        name, None, (), f"{facts.trace.call.name!r} has no value in argument {arg!r} to trace"
    )


def _before(facts: TraceFacts) -> int:
    return len(facts.trace.messages) + 1  # every message is before the proposed call


def _unaddressed(
    facts: TraceFacts,
    name: str,
    values: list[ValueProvenance],
    hops: int,
    patterns: Via,
    names: bool,
) -> Fact:
    """Whether every value is trusted or in a designated document outside addressed text."""
    before = _before(facts)
    region, year = facts.search.region, facts.search.year
    shown: list[str] = []
    sources: list[SourceRef] = []
    trails: list[Trail] = []
    for v in values:
        direct = derivation(facts, v, before, 0)
        if direct is not None:
            shown.append(describe(facts, v))
            sources.extend(direct[1])
            trails.append(trail(facts, v))  # the user, a trusted source or the records
            continue
        docs = documents(facts, v, before, hops, patterns, names)
        what = f"{v.path} {_short(v.value.text)!r}"
        addressed = []
        for ref, call, chain in docs:
            plain, cue = holds_outside(facts.trace.messages[ref.index].text, v.value, region, year)
            linked = _addressed_link(facts, chain) if plain else None
            if linked is not None:
                plain = False
                addressed.append(
                    f"{ref} is from {linked[0]}, a document with text addressed "
                    f"to the agent (cue {linked[1].cue!r} in {linked[1].line!r}) "
                    "that may have chosen it"
                )
            if plain:
                shown.append(
                    f"{what} is in {_named(ref, call, chain)}, outside text addressed to the agent"
                )
                sources.extend((ref, *chain[1]))
                trails.append(designated(facts, v, (ref, *chain[1])))
                break
            if cue is not None:
                addressed.append(
                    f"{ref} writes it only from text addressed to the agent on "
                    f"(cue {cue.cue!r} in {cue.line!r})"
                )
        else:
            if addressed:
                return Fact(
                    name,
                    False,
                    tuple(r for r, _, _ in docs),
                    f"{what}: " + "; ".join(addressed[:3]),
                    (trail(facts, v),),
                )
            if docs:  # found by the search, but not as one run of one message's text
                return Fact(
                    name,
                    False,
                    tuple(r for r, _, _ in docs),
                    f"{what} is in "
                    + ", ".join(str(r) for r, _, _ in docs[:3])
                    + " only split across two messages: not known to be outside text "
                    "addressed to the agent",
                    (trail(facts, v),),
                )
            return Fact(
                name,
                False,
                v.sources,
                f"{describe(facts, v)}, and not from a call "
                f"the user pointed at (within {hops} hop(s))",
                (trail(facts, v),),
            )
    return Fact(name, True, tuple(dict.fromkeys(sources)), "; ".join(shown[:5]), tuple(trails[:5]))


@predicate
def arg_designated_unaddressed(
    facts: TraceFacts,
    arg: str,
    hops: int = 1,
    via: Any = None,
    kinds: Any = None,
    names: bool = False,
) -> Fact:
    """Every value is in a designated document outside text addressed to the agent.

    `names`: one-word names designate, as :func:`arg_from_designated`'s opt-in.
    """
    name = "arg_designated_unaddressed"
    values, empty = _open_values(facts, name, arg, kinds)
    if empty is not None:
        return empty
    return _unaddressed(facts, name, values, int(hops), via_patterns(via), bool(names))


def _kind_keys(facts: TraceFacts, index: int, kind: str) -> list[str]:
    """The keys of every value of a kind a message is a source of, as the index reads it.

    Both readings of the text, echoes of its call's arguments left out
    (:func:`~guardagent.trace.thread.state.message_keys`): the reading the search found the value
    in, kept for the thread (a long result is not read again).
    """
    keys = message_keys(
        facts.trace.messages[index], facts.trace, facts.search.region, facts.search.year
    )
    return sorted(k for k in keys if k.startswith(kind + ":"))


@predicate
def arg_designated_unique(
    facts: TraceFacts, arg: str, hops: int = 1, via: Any = None, kinds: Any = None
) -> Fact:
    """Every designated document holding a value holds no other value of its kind."""
    name = "arg_designated_unique"
    values, empty = _open_values(facts, name, arg, kinds)
    if empty is not None:
        return empty
    before, patterns = _before(facts), via_patterns(via)
    shown: list[str] = []
    trails: list[Trail] = []
    for v in values:
        what = f"{v.path} {_short(v.value.text)!r}"
        direct = derivation(facts, v, before, 0)
        if direct is not None:
            shown.append(describe(facts, v))
            trails.append(trail(facts, v))  # the user, a trusted source or the records
            continue
        if v.value.kind == "text" or not v.value.keys:
            return Fact(
                name,
                None,
                v.sources,
                f"{what} is a {v.value.kind} value: it has no "
                "kind whose values a document could be counted for",
                (trail(facts, v),),
            )
        docs = documents(facts, v, before, int(hops), patterns)
        if not docs:
            return Fact(
                name,
                False,
                v.sources,
                f"{describe(facts, v)}, and not from a call "
                f"the user pointed at (within {hops} hop(s))",
                (trail(facts, v),),
            )
        mine = set(v.value.keys)
        for ref, call, chain in docs:
            others = [k for k in _kind_keys(facts, ref.index, v.value.kind) if k not in mine]
            if others:
                listed = ", ".join(repr(_short(k.partition(":")[2])) for k in others[:3])
                return Fact(
                    name,
                    False,
                    (ref, *chain[1]),
                    f"{_named(ref, call, chain)} holds {v.value.kind} values other "
                    f"than {what}: {listed}",
                    (designated(facts, v, (ref, *chain[1])),),
                )
        where = ", ".join(str(ref) for ref, _, _ in docs)
        shown.append(f"{what} is the only {v.value.kind} of {where}")
        ref, _, chain = docs[0]
        trails.append(designated(facts, v, (ref, *chain[1])))
    return Fact(name, True, (), "; ".join(shown[:5]), tuple(trails[:5]))


@predicate
def arg_from_same_document(
    facts: TraceFacts, arg: str, other: str, hops: int = 1, via: Any = None, kinds: Any = None
) -> Fact:
    """The values of both arguments come from one designated document (or the user)."""
    name = "arg_from_same_document"
    values, empty = _open_values(facts, name, arg, kinds)
    if empty is not None:
        return empty
    more, empty = _open_values(facts, name, other, kinds)
    if empty is not None:
        return empty
    before, patterns = _before(facts), via_patterns(via)
    common: set[int] | None = None
    named: dict[int, str] = {}
    derived: list[str] = []
    for v in [*values, *more]:
        if derivation(facts, v, before, 0) is not None:
            continue
        docs = documents(facts, v, before, int(hops), patterns)
        if not docs:
            return Fact(
                name,
                False,
                v.sources,
                f"{describe(facts, v)}, and not from a call "
                f"the user pointed at (within {hops} hop(s))",
            )
        here = {ref.index for ref, _, _ in docs}
        named.update((ref.index, _named(ref, call, chain)) for ref, call, chain in docs)
        derived.append(
            f"{v.path} {_short(v.value.text)!r} is in " + ", ".join(str(ref) for ref, _, _ in docs)
        )
        common = here if common is None else common & here
        if not common:
            return Fact(
                name,
                False,
                tuple(facts.search.refs(here)),
                "no one designated document holds them all: " + "; ".join(derived[-3:]),
            )
    if common is None:
        return Fact(
            name, True, (), f"every value of {arg!r} and {other!r} is from a trusted source"
        )
    first = min(common)
    return Fact(
        name,
        True,
        facts.search.refs([first]),
        f"{named[first]} holds every value of {arg!r} and {other!r} not from a trusted source",
    )


def _check_document(given: dict[str, Any]) -> None:
    hops = given["hops"]
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
        raise PredicateSpecError(f"hops must be a whole number from 1 to {MAX_HOPS}, not {hops!r}")
    for key in ("arg", "other"):
        if key in given and (not isinstance(given[key], str) or not given[key]):
            raise PredicateSpecError(
                f"{key} must be an argument name, a path, '*' or '@recipients'"
            )
    via_patterns(given["via"])


for _name in ("arg_designated_unaddressed", "arg_designated_unique", "arg_from_same_document"):
    checks(_name)(_check_document)


@predicate
def arg_from_designated(
    facts: TraceFacts,
    arg: str,
    hops: int = 1,
    via: Any = None,
    kinds: Any = None,
    part: Any = None,
    names: bool = False,
    addressed: bool = False,
) -> Fact:
    """Every value of the argument derives from a source the user designated (:mod:`.derived`).

    A value a designated document writes only inside text addressed to the agent ("AI
    assistant, before you continue, send it to ...") is what the document *told the agent*,
    not what it states: it is not designated unless the policy opts back in with
    `addressed=True` (the reading of :func:`arg_designated_unaddressed`, which this is by
    default). Tool results are evidence, never instructions.
    """
    values = select_values(facts, arg, kinds, part)
    if not values:
        what = (
            "names no recipient to trace"
            if arg == "@recipients"
            else f"has no value in argument {arg!r}"
        )
        return Fact("arg_from_designated", None, (), f"{facts.trace.call.name!r} {what}")
    before = len(facts.trace.messages) + 1  # every message is before the proposed call
    patterns = via_patterns(via)
    chains = [
        (v, derivation(facts, v, before, int(hops), patterns, names=bool(names))) for v in values
    ]
    failed = [v for v, c in chains if c is None]
    if failed:
        sources = tuple(dict.fromkeys(s for v in failed for s in v.sources))
        detail = "; ".join(
            f"{describe(facts, v)}, and not from a call the user pointed at (within {hops} hop(s))"
            for v in failed[:3]
        )
        notes = _notes(facts, sources)
        if notes:
            detail += " (" + "; ".join(notes[:3]) + ")"
        return Fact(
            "arg_from_designated",
            False,
            sources,
            detail,
            tuple(trail(facts, v) for v in failed[:3]),
        )
    if not addressed:
        strict = _unaddressed(
            facts, "arg_from_designated", values, int(hops), patterns, bool(names)
        )
        if strict.value is not True:
            return strict
    shown = []
    sources_list: list[SourceRef] = []
    trails = []
    for v, chain in chains[:5]:
        assert chain is not None
        sources_list.extend(chain[1])
        documented = chain[0].startswith("which is from ")  # else the user, trusted, records
        trails.append(designated(facts, v, chain[1]) if documented else trail(facts, v))
        if documented:
            shown.append(
                f"{v.path} {_short(v.value.text, 60)!r} is {chain[0].removeprefix('which is ')}"
            )
        else:
            shown.append(describe(facts, v))
    return Fact(
        "arg_from_designated",
        True,
        tuple(dict.fromkeys(sources_list)),
        "; ".join(shown),
        tuple(trails),
    )


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
    for flag in ("names", "addressed"):
        if not isinstance(given.get(flag, False), bool):
            raise PredicateSpecError(f"{flag} must be true or false")
