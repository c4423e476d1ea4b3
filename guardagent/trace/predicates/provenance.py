"""Provenance predicates: where each value of the proposed call came from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from guardagent.trace.found.values import ValueKind
from guardagent.trace.found.written import MAX_TARGET_CHARS, target_shaped
from guardagent.trace.predicates.engine import TraceFacts, predicate
from guardagent.trace.predicates.fact import Fact, Trail
from guardagent.trace.predicates.listed_names import with_listed_names
from guardagent.trace.predicates.options import parse_kinds, parse_part, top_arg, under
from guardagent.trace.predicates.trails import plain
from guardagent.trace.sources.provenance import (
    ValueProvenance,
    address_list,
    invented_pieces,
    recipients_read,
)
from guardagent.trace.sources.records import RecordSet
from guardagent.trace.sources.temporal import RECIPIENT_KINDS
from guardagent.trace.thread.state import flatten

INNER_KINDS: tuple[ValueKind, ...] = ("email", "url", "iban", "phone")
"""Typed values inside free text that provenance predicates look at by default."""


def _select(facts: TraceFacts, arg: str, kinds: Any) -> list[ValueProvenance]:
    return with_listed_names(facts, _selected(facts, arg, kinds))


def _selected(facts: TraceFacts, arg: str, kinds: Any) -> list[ValueProvenance]:
    wanted = parse_kinds(kinds)
    label = facts.labels.label(facts.trace.call.name)
    if arg == "@recipients" and not label.recipients:
        chosen = [v for v in facts.provenance.values if v.value.kind in RECIPIENT_KINDS]
    else:
        names = list(label.recipients) if arg == "@recipients" else [arg]
        chosen = [v for name in names for v in facts.provenance.select(name)]
    if arg == "@recipients":  # read as the mail server, bank or gateway reads the argument
        chosen = recipients_read(chosen, dict(flatten(facts.trace.call.args)))
        return [
            v
            for v in chosen
            if (wanted is None and (not v.inner or v.value.kind in INNER_KINDS))
            or (wanted is not None and v.value.kind in wanted)
        ]
    if wanted is not None:
        return [v for v in chosen if v.value.kind in wanted]
    # by default a free-text value holding addresses, URLs, IBANs or phone numbers is judged
    # by those (a model-written "Alice <alice@x.org>" is as trusted as the address in it);
    # a short one is a target the tool uses whole (a path, a command): judged whole too
    holders = {v.path for v in chosen if v.inner and v.value.kind in INNER_KINDS}
    raw = dict(flatten(facts.trace.call.args))
    return [
        v
        for v in chosen
        if (
            v.value.kind in INNER_KINDS
            if v.inner
            else v.value.kind != "text" or v.path not in holders or _target_text(raw.get(v.path))
        )
    ]


def _target_text(scalar: Any) -> bool:
    """A text short enough to be what the tool acts on, and not an address list.

    ``delete_file("notes.txt; rm -rf ~")`` runs all of it, whatever link ``notes.txt`` reads
    as; ``Alice <alice@x.org>`` is its address (RFC 5322 display names are not where it
    goes), and prose over :data:`~guardagent.trace.predicates.naming.MAX_TARGET_CHARS` is
    a body, judged by what identifies something inside it.
    """
    return (
        isinstance(scalar, str)
        and (len(scalar) <= MAX_TARGET_CHARS or target_shaped(scalar))
        and not address_list(scalar)
    )


def _withparse_part(
    facts: TraceFacts, values: list[ValueProvenance], part: Any
) -> list[ValueProvenance]:
    which = parse_part(part)
    if which is None:
        return values
    out: list[ValueProvenance] = []
    for v in values:  # a URL's host, and the host of every URL it carries (open redirects)
        whole = facts.search.part_provenance(v, which)
        if whole is not None:
            out.append(whole)
        out.extend(facts.search.carried_parts(v, which))
    return out


def _whole_values(facts: TraceFacts, arg: str) -> list[ValueProvenance]:
    """The whole values of an argument (never the URLs inside a longer text).

    A browser opens the whole argument: ``javascript:...//https://ubs.com`` runs a script
    and ``see https://ubs.com`` is no address at all, whatever URL is written inside, so a
    host or domain rule judges the whole value (a phrase has no host: it is from nobody).
    """
    return [v for v in _select(facts, arg, "email,url,iban,phone,amount,date,text") if not v.inner]


def in_records(facts: TraceFacts, value: ValueProvenance) -> list[RecordSet]:
    """The sections of the user's records that hold a value (a trusted source)."""
    return facts.records.holding(value.value)


def trusted(facts: TraceFacts, value: ValueProvenance) -> bool:
    """From the user, the system prompt, a trusted tool or the user's records."""
    return value.origin in ("user", "trusted") or bool(in_records(facts, value))


def describe(facts: TraceFacts, value: ValueProvenance) -> str:
    """A value's provenance in one line, the user's records included."""
    sections = in_records(facts, value)
    if not sections or value.origin in ("user", "trusted"):
        return value.describe()
    shown = value.value.text if len(value.value.text) <= 60 else value.value.text[:60] + "..."
    where = ", ".join(s.describe() for s in sections)
    return f"{value.path} {shown!r} is from the user's records: {where}"


def trail(facts: TraceFacts, value: ValueProvenance) -> Trail:
    """A value's chain by its origin, the user's records included (:mod:`.trails`)."""
    return plain(value, records=bool(in_records(facts, value)))


def select_values(facts: TraceFacts, arg: str, kinds: Any, part: Any) -> list[ValueProvenance]:
    """The values a provenance predicate judges (see the package docstring).

    With `part` (a host or domain rule) and no `kinds`, the whole values (see
    :func:`_whole_values`); ``kinds="url"`` asks about the URLs written inside a free-text
    argument (a body) instead.
    """
    if parse_part(part) is None or kinds is not None:
        return _withparse_part(facts, _select(facts, arg, kinds), part)
    return _withparse_part(facts, _whole_values(facts, arg), part)


def _provenance(
    facts: TraceFacts,
    name: str,
    arg: str,
    kinds: Any,
    part: Any,
    test: Callable[[ValueProvenance], bool],
    every: bool,
    pieces: bool = False,
) -> Fact:
    values = select_values(facts, arg, kinds, part)
    if pieces and part is None and kinds is None:  # what a phrase the model made carries
        values = values + invented_pieces(facts.search, facts.provenance, values)
    if not values and arg == "@recipients":
        if _sends_to_nobody(facts):  # as an absent argument: vacuous for every, not for any
            return Fact(
                name,
                every,
                (),
                f"{facts.trace.call.name!r} names no recipient: its recipient arguments are empty",
            )
        return Fact(name, None, (), f"{facts.trace.call.name!r} names no recipient to trace")
    if not values:
        label = facts.labels.label(facts.trace.call.name)
        unknown = (
            label.args is not None
            and arg not in ("*", "@recipients")
            and top_arg(arg) not in label.args
        )
        note = f" ({facts.trace.call.name!r} has no such argument)" if unknown else ""
        return Fact(name, every, (), f"argument {arg!r} has no value to trace{note}")
    hits = [v for v in values if test(v)]
    if every:
        value = len(hits) == len(values)
        deciding = values if value else [v for v in values if not test(v)]
    else:
        value = bool(hits)
        deciding = hits if value else values
    sources = tuple(dict.fromkeys(s for v in deciding for s in v.sources))
    trails = tuple(trail(facts, v) for v in deciding[:5])
    return Fact(name, value, sources, "; ".join(describe(facts, v) for v in deciding[:5]), trails)


def _sends_to_nobody(facts: TraceFacts) -> bool:
    """The label declares the recipient arguments and the call leaves every one empty.

    An event with no participants goes to nobody: like any absent argument there is nothing
    to trace. Without declared recipients where the data goes is unknown, a recipient
    argument holding anything (a flag, a value no reader placed) is not empty, and an
    irreversible call (a payment) without its payee pays whatever the tool defaults to: open.
    """
    label = facts.labels.label(facts.trace.call.name)
    recipients = label.recipients
    if label.effect == "irreversible":  # a payment with no payee: the tool's default is paid
        return False
    return bool(recipients) and not any(
        v not in (None, "")
        for p, v in flatten(facts.trace.call.args)
        if any(under(p, r) for r in recipients)
    )


@predicate
def arg_present(facts: TraceFacts, arg: str) -> Fact:
    """The argument is present with at least one non-empty value."""
    present = [
        p for p, v in flatten(facts.trace.call.args) if under(p, arg) and v not in (None, "")
    ]
    return Fact(
        "arg_present",
        bool(present),
        (),
        f"argument {arg!r} is {'present' if present else 'absent'}",
    )


@predicate
def arg_from_user(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Every value of the argument is in a user message."""
    return _provenance(
        facts, "arg_from_user", arg, kinds, part, lambda v: "user" in v.kinds(), every=True
    )


@predicate
def arg_from_trusted_tool(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Every value of the argument is in a trusted tool's result."""
    return _provenance(
        facts,
        "arg_from_trusted_tool",
        arg,
        kinds,
        part,
        lambda v: "trusted_tool" in v.kinds(),
        every=True,
    )


@predicate
def arg_from_trusted(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Every value comes from the user, the system prompt, a trusted tool or the records."""
    return _provenance(
        facts, "arg_from_trusted", arg, kinds, part, lambda v: trusted(facts, v), every=True
    )


@predicate
def arg_from_records(
    facts: TraceFacts, arg: str, section: str | None = None, kinds: Any = None, part: Any = None
) -> Fact:
    """Every value of the argument is in the user's records (or in the named section)."""
    if section is not None and facts.records.section(section) is None:
        known = ", ".join(facts.records.names()) or "none"
        return Fact(
            "arg_from_records",
            None,
            (),
            f"the user's records have no section {section!r} (sections: {known})",
        )
    if not select_values(facts, arg, kinds, part):
        return Fact("arg_from_records", None, (), f"argument {arg!r} has no value to look up")
    return _provenance(
        facts,
        "arg_from_records",
        arg,
        kinds,
        part,
        lambda v: any(section in (None, s.name) for s in in_records(facts, v)),
        every=True,
    )


@predicate
def arg_only_untrusted(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Some value is found only in untrusted tool results (and not in the user's records).

    A phrase in no message (the model made it) is judged by what identifies something
    inside it too: ``9999 units`` is only from the page that said ``9999``.
    """
    return _provenance(
        facts,
        "arg_only_untrusted",
        arg,
        kinds,
        part,
        lambda v: v.origin == "untrusted" and not in_records(facts, v),
        every=False,
        pieces=True,
    )


@predicate
def arg_invented(facts: TraceFacts, arg: str, kinds: Any = None, part: Any = None) -> Fact:
    """Some value is in no user, system or tool message (nor in the user's records)."""
    return _provenance(
        facts,
        "arg_invented",
        arg,
        kinds,
        part,
        lambda v: v.origin == "invented" and not in_records(facts, v),
        every=False,
    )
