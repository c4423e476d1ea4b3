"""A one-word name the user writes beside the noun its tool is named by: one thing, pointed at.

"Summarise the article Bob posted in the 'general' channel", "the details are in Alice's
inbox": a one-word argument (``read_channel_messages(channel="general")``,
``read_inbox(user="Alice")``) designates nothing by itself, since it may name a collection
or be a search word ("my unread mails": :func:`~guardagent.trace.predicates.derived.
specific`). Written beside a singular noun of its tool's name or of its argument's name, it
is what a careful reader takes as the name of one such thing: "the general channel",
"channel general", "'general' channel", "Alice's inbox", "the inbox of Alice". The tool's
description is read for that noun, so no lexicon of channels or inboxes is needed:
``get_folder(folder=...)`` makes "the archive folder" one folder as well.

What is not read so:

- a plural noun ("the unread emails", "Bob's messages"): a collection, not one thing;
- a noun that is not the tool's or the argument's ("the general forum" for
  ``read_channel_messages``), or a verb or a preposition of the tool's name (``read``,
  ``get``, ``by``: :data:`NOT_NOUNS`);
- a noun of a store of anyone's documents (:data:`FOLDERS`: "the unread folder" for
  ``get_folder(folder=...)`` is still a collection; a policy opts in with ``names=True``);
- the name written as part of a longer word (``generalist``): the user wrote another name.

The name must still be asked for (:func:`~guardagent.trace.predicates.designation.
requested`: a request designates, a mention, a question or a refusal does not); this
module only says that the one word names one thing. Linear: the text beside each of the
value's spans is read once, a bounded look-around.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.found.written import exact_spans
from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.sources.provenance import ValueProvenance
from guardagent.trace.text.normal import normalize_text

NOT_NOUNS = frozenset(
    {
        "get",
        "read",
        "list",
        "search",
        "find",
        "fetch",
        "open",
        "send",
        "post",
        "add",
        "remove",
        "delete",
        "create",
        "update",
        "set",
        "put",
        "make",
        "write",
        "append",
        "share",
        "invite",
        "cancel",
        "reschedule",
        "check",
        "by",
        "from",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "all",
        "the",
        "a",
        "an",
        "my",
        "new",
        "id",
        "ids",
        "name",
        "names",
        "info",
        "information",
        "data",
        "details",
        "content",
        "contents",
        "query",
    }
)
"""Words of a tool's or an argument's name that name no kind of thing (verbs, prepositions)."""

FOLDERS = frozenset(
    {
        "folder",
        "directory",
        "dir",
        "mailbox",
        "drive",
        "feed",
        "queue",
        "category",
        "label",
        "tag",
        "collection",
        "bucket",
        "library",
        "archive",
    }
)
"""Nouns of a store of anyone's documents, not of one conversation: "the unread folder" still
names a collection (a channel and an inbox are the messages of one place or one person, which
issue 33 lets the user point at)."""

_LOOK = 48
_QUOTES = " \t'\"`\u2018\u2019\u201c\u201d\u00ab\u00bb#"
_WORD = re.compile(r"[^\W\d_]+$")
_FIRST = re.compile(r"[^\W\d_]+")


@lru_cache(maxsize=1024)
def kind_nouns(tool: str, arg: str) -> frozenset[str]:
    """The singular nouns of a tool's name and an argument's name (``channel``, ``inbox``)."""
    words: set[str] = set()
    for name in (tool, arg.split(".")[0].split("[")[0]):
        spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
        words.update(w.casefold() for w in spaced.split())
    return frozenset(
        w
        for w in words
        if w not in NOT_NOUNS
        and w not in FOLDERS
        and len(w) > 2
        and not (w.endswith("s") and not w.endswith("ss"))
    )


def _word_before(text: str) -> str:
    m = _WORD.search(text.rstrip(_QUOTES))
    return normalize_text(m.group(0)) if m else ""


def _word_after(text: str) -> str:
    m = _FIRST.match(text.lstrip(_QUOTES))
    return normalize_text(m.group(0)) if m else ""


def beside_noun(text: str, start: int, end: int, nouns: frozenset[str]) -> bool:
    """Whether the name at ``text[start:end]`` is written beside one of the nouns.

    "<name> <noun>", "<noun> <name>", "<name>'s <noun>" and "<noun> of <name>", quotes and
    ``#`` around the name allowed.
    """
    before = text[max(0, start - _LOOK) : start]
    after = text[end : end + _LOOK]
    if _word_after(after) in nouns or _word_before(before) in nouns:
        return True
    rest = unicodedata.normalize("NFKC", after).casefold()
    if rest.startswith(("'s ", "\u2019s ")) and _word_after(rest[3:]) in nouns:
        return True
    head = before.rstrip(_QUOTES)
    return _word_before(head) == "of" and _word_before(head[:-2].rstrip()) in nouns


def named_beside_noun(
    facts: TraceFacts, call: ToolCall, value: ValueProvenance, raw: object, message: int
) -> bool:
    """Whether the user's `message` writes a one-word argument beside a noun of its tool.

    Args:
        facts: The analysed trace.
        call: The earlier call whose argument it is.
        value: The argument's value (a one-word text).
        raw: The argument's scalar as the call gave it (the name is found as written).
        message: The user message that asks for it.
    """
    if not isinstance(raw, str) or value.value.kind != "text" or len(value.value.tokens) != 1:
        return False
    nouns = kind_nouns(call.name, value.path)
    if not nouns:
        return False
    text = facts.trace.messages[message].text
    return any(beside_noun(text, s, e, nouns) for s, e in exact_spans(text, raw))
