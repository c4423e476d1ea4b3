"""Whether a user wrote a one-word value as a name, or as a common noun of their sentence.

With ``names=True`` (:func:`~.derived.specific`) a channel or an inbox the user names by one
word designates it: "Read the messages in general". But the same word is often a common
noun of the request: "Summarise *the article* Bob posted in general", "Pay *the invoice*",
"Read *my messages*". A channel an attacker named ``article`` (or an agent steered to read
channel ``invoice``) is then "named by the user" in a sentence that never named it. A
careful reader hears a name where the word takes no determiner ("in general", "open
random") or is followed by a word for its kind ("the general channel", "the sales inbox"),
or stands in quotes or after a ``#`` or ``@``; after a determiner ("the", "my", "an") with
no such word after, it is a common noun and names no source (fail closed: write "the
`article` channel" or "#article").
"""

from __future__ import annotations

import re

DETERMINERS = frozenset(
    {
        "the",
        "a",
        "an",
        "my",
        "your",
        "our",
        "his",
        "her",
        "their",
        "its",
        "this",
        "that",
        "these",
        "those",
        "some",
        "any",
        "every",
        "each",
        "no",
        "all",
        "another",
        "which",
        "what",
    }
)
"""Words before a common noun."""
KINDS = frozenset(
    {
        "channel",
        "channels",
        "inbox",
        "inboxes",
        "folder",
        "folders",
        "list",
        "lists",
        "group",
        "groups",
        "room",
        "rooms",
        "board",
        "space",
        "workspace",
        "chat",
        "thread",
        "mailbox",
        "mailboxes",
        "account",
        "feed",
        "queue",
        "team",
        "project",
        "repo",
        "repository",
        "label",
        "tag",
        "page",
    }
)
"""Words for a source's kind ("the general channel"): the word before them is its name."""
_WORD = re.compile(r"\w+(?:['’]\w+)*")
_MARKS = "#@`'\"“‘«"


def _word_before(text: str, at: int) -> str:
    found = list(_WORD.finditer(text, max(0, at - 40), at))
    return found[-1].group().lower() if found else ""


def _word_after(text: str, end: int) -> str:
    found = _WORD.search(text, end, end + 40)
    return found.group().lower() if found and not text[end : found.start()].strip(" ") else ""


def written_as_name(text: str, spans: list[tuple[int, int]], kinds: frozenset[str]) -> bool:
    """Whether one of the spans writes the value as a name (module doc).

    Args:
        text: The user's message.
        spans: Where it writes the value.
        kinds: More words for the argument's kind (its name's words: "channel").
    """
    for at, end in spans:
        if text[at - 1 : at] in _MARKS and at:
            return True
        if _word_before(text, at) not in DETERMINERS or _word_after(text, end) in KINDS | kinds:
            return True
    return False
