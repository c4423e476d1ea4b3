"""Whether the user designated a call's argument: named it, as written, inside a request.

A user message that holds an argument of an earlier call (``read_file("invoice-9999.txt")``)
points the assistant at that document only when it *asks* for it
(:mod:`guardagent.trace.found.requests`): "Do NOT open invoice-9999.txt", "is invoice-9999.txt a
scam?" and "he said 'pay invoice-9999.txt'" name it without designating it. And a name is
designated as the tool reads it: a text argument (a path, an id) only where the user wrote
it with every character (:func:`~guardagent.trace.found.written.exact_spans`: a case-sensitive
store reads ``Invoice-0425.txt`` or ``invoice-0425.txt `` as another file); a typed value
(a URL, an address) where the user wrote the same value.

The user's last word counts: every mention of the value in the user's messages is read in
order, and the last one that asks, refuses or questions must be a request, made before the
call; a later message that only takes back ("Never mind.") withdraws it.
"""

from __future__ import annotations

from typing import Any

from guardagent.trace.found.locate import extract_values
from guardagent.trace.found.requests import Verdict, mentions, takes_back
from guardagent.trace.found.written import exact_spans
from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.predicates.proper_names import written_as_name
from guardagent.trace.predicates.tool_words import tool_words
from guardagent.trace.sources.provenance import SourceRef, ValueProvenance
from guardagent.trace.text.normal import reading_form

_DECISIVE = frozenset({"request", "refused", "asked"})
_SAID = {
    "refused": "negated, doubted or taken back",
    "asked": "asked about, not asked for",
    "quoted": "quoted or reported, not asked for",
    "said": "mentioned, not asked for",
}


def _spans(text: str, value: ValueProvenance, raw: Any) -> list[tuple[int, int]]:
    """Where a message writes the value as its tool reads it."""
    exact = exact_spans(text, raw) if isinstance(raw, str) and not value.inner else []
    if value.value.kind == "text" or not value.value.placed:
        return exact  # a name (a path, an id, a link-shaped token no parser places)
    spans = exact
    form = reading_form(text)
    if not spans and value.value.keys and len(form) == len(text):  # offsets are the text's
        wanted = set(value.value.keys)
        spans = [(f.start, f.end) for f in extract_values(form) if wanted & set(f.value.keys)]
    return spans


def written_as_read(facts: TraceFacts, index: int, value: ValueProvenance, raw: Any) -> bool:
    """Whether trusted message `index` vouches for the value as its tool reads it.

    A name (a text, a link-shaped token) only where written with every character: a trusted
    listing that holds ``Invoice-0425.txt`` does not vouch for ``invoice-0425.txt`` on a
    case-sensitive store (a typed value, a URL or an address, by its value). And the system
    prompt never vouches for a name it refuses ("never open invoice-9999.txt").
    """
    key = ("written_as_read", index, value.path, value.value, repr(raw))
    found = facts.memo.get(key)
    if found is None:
        message = facts.trace.messages[index]
        spans = _spans(message.text, value, raw)
        exact = (
            value.value.kind != "text"
            and value.value.placed
            or value.inner
            or not (isinstance(raw, str))
            or bool(spans)
        )
        refused = message.source == "system" and "refused" in mentions(message.text, spans)
        found = facts.memo[key] = exact and not refused
    return bool(found)


def named_as_name(facts: TraceFacts, index: int, value: ValueProvenance, raw: Any) -> bool:
    """Whether user message `index` writes a one-word value as a name, not a common noun.

    "Read the messages in general" names the channel ``general``; "Summarise the article
    Bob posted" names no channel ``article`` (:mod:`.proper_names`).
    """
    text = facts.trace.messages[index].text
    kinds = frozenset(tool_words(value.path.rsplit(".", 1)[-1].split("[", 1)[0]).split())
    return written_as_name(text, _spans(text, value, raw), kinds)


def _user_messages(facts: TraceFacts) -> list[int]:
    key = ("user_messages",)
    found = facts.memo.get(key)
    if found is None:
        found = facts.memo[key] = [m.index for m in facts.trace.messages if m.source == "user"]
    return found


def _takes_back(facts: TraceFacts, index: int) -> bool:
    key = ("takes_back", index)
    found = facts.memo.get(key)
    if found is None:
        found = facts.memo[key] = takes_back(facts.trace.messages[index].text)
    return bool(found)


def requested(
    facts: TraceFacts, value: ValueProvenance, raw: Any, before: int
) -> tuple[SourceRef | None, str, bool]:
    """The user message that asks for the value before `before`, or None and why not.

    The third item says the user spoke against it (refused, questioned or took it back):
    then no other source may designate it either.

    Args:
        facts: The analysed trace.
        value: One argument value of an earlier call.
        raw: That argument's scalar as the call gave it (a text is compared with it).
        before: The call's message: only a request before it designates it.
    """
    key = ("requested", value.path, value.value, repr(raw), before)
    if key in facts.memo:
        return facts.memo[key]  # type: ignore[no-any-return]
    said: list[tuple[int, Verdict]] = []
    for i in _user_messages(facts):
        text = facts.trace.messages[i].text
        said.extend((i, v) for v in mentions(text, _spans(text, value, raw)))
    asks = [i for i, v in said if v == "request" and i < before]
    decisive = [(i, v) for i, v in said if v in _DECISIVE]
    shown = repr(str(raw)[:60])
    found: tuple[SourceRef | None, str, bool]
    if not said:
        found = (
            None,
            f"the user never wrote {shown} as the tool reads it (every character "
            "counts: a case-sensitive store reads another spelling as another "
            "file)",
            False,
        )
    elif decisive and decisive[-1][1] != "request":
        i, v = decisive[-1]
        found = (
            None,
            f"the user's message {i} names {shown} but does not ask for it ({_SAID[v]})",
            True,
        )
    elif not asks:
        i, v = said[-1]
        found = (
            None,
            f"the user's message {i} names {shown} but does not ask for it "
            f"({_SAID.get(v, 'asked for only after the call')})",
            False,
        )
    else:
        last = max(i for i, v in said if v == "request")
        back = next((i for i in _user_messages(facts) if i > last and _takes_back(facts, i)), None)
        if back is not None:
            found = (None, f"the user's message {back} takes back the request for {shown}", True)
        else:
            found = (SourceRef(asks[0], facts.trace.messages[asks[0]].source, "user"), "", False)
    facts.memo[key] = found
    return found
