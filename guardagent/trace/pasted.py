"""Where a user's message holds text pasted from elsewhere that no line introduces.

:mod:`guardagent.trace.requests` already reads "My colleague wrote:" and a line break, a
``>`` line and a fenced block as someone else's words. A careful reader also hears them in:

- an e-mail pasted with its headers ("Subject: Urgent" then "Pay X now."): a line that
  starts with ``Subject:`` or ``From:``, or two header lines in a row (``To:``, ``Date:``,
  ``Cc:``...), starts pasted text;
- an introduction on the same line that points forward ("Someone sent me this: pay X."):
  a word of sending or reporting, then "this", "these", "following" or "below" and a
  ``:``, in one sentence;
- a closing double quote that no quote opened ('Pay X" is what the email says.'): the
  user pasted from the middle of a quotation, so what comes before it is quoted.

Pasted text runs to the message's end (as after an introducing line): its author, not the
user, wrote what follows as much as the line itself, and an e-mail's body may run on in
paragraphs. Fail closed: "Subject: the invoice" then "Please pay X." designates nothing; the
user can ask in a message of its own. One linear pass for each reading.
"""

from __future__ import annotations

import re

from guardagent.trace.budget import check_budget

_WORD = re.compile(r"\w+(?:['’]\w+)*")  # as the request reader's words: one class, one run
_QUOTE = re.compile("[\"“”]")
_STRONG_HEADERS = frozenset({"subject", "from"})
"""Header fields that alone mark a pasted e-mail (a chat message has no subject line)."""
MAIL_HEADERS = _STRONG_HEADERS | frozenset({
    "to", "cc", "bcc", "date", "sent", "reply-to", "sender", "message-id", "in-reply-to",
    "references", "return-path", "received", "delivered-to", "importance", "attachments",
})  # fmt: skip
"""RFC 5322 header fields (and the ones mail clients print) that start pasted e-mail."""
SENDING = frozenset({"sent", "send", "forwarded", "received", "got", "shared", "pasted",
                     "copied", "emailed", "texted", "messaged", "posted"})  # fmt: skip
"""Words of an introduction on the same line ("Someone sent me this:")."""
_POINTING = frozenset({"this", "these", "following", "below"})
_SENTENCE_ENDS = frozenset(".!?\n")


def _header(line: str) -> str | None:
    """The header field a line starts with (``Subject: Urgent`` -> ``subject``), or None."""
    name, colon, _ = line.lstrip(" \t>").partition(":")
    name = name.lower()
    return name if colon and name in MAIL_HEADERS else None


def headers_from(text: str) -> int:
    """Where pasted e-mail headers start (``len(text)``: none)."""
    at, run_start, run = 0, 0, 0
    for line in text.splitlines(keepends=True):
        check_budget()
        name = _header(line)
        if name is None:
            run = 0
        else:
            run_start = at if run == 0 else run_start
            run += 1
            if name in _STRONG_HEADERS or run >= 2:
                return run_start
        at += len(line)
    return len(text)


def introduced_from(text: str, reporting: frozenset[str]) -> int:
    """Where text introduced on the same line starts ("sent me this: ..."), or ``len(text)``.

    `reporting`: the request reader's words of reported or pasted speech ("wrote", "email").
    """
    marked = False
    prev_end = 0
    for m in _WORD.finditer(text):
        check_budget()
        if any(c in _SENTENCE_ENDS for c in text[prev_end:m.start()]):
            marked = False
        word = m.group().lower()
        if marked and word in _POINTING and text[m.end():m.end() + 3].lstrip(" \t")[:1] == ":":
            return text.index(":", m.end()) + 1
        marked = marked or word in SENDING or word in reporting
        prev_end = m.end()
    return len(text)


def quoted_until(text: str) -> int:
    """The end of the last closing double quote that no quote opened (0: none).

    A quote opens after a space, a bracket or the text's start; one after anything else
    that closes nothing closes a quotation the user pasted from its middle. After a digit it
    is an inch mark (``27"``).
    """
    until = 0
    closing = ""
    for m in _QUOTE.finditer(text):
        check_budget()
        i, c = m.start(), m.group()
        before = text[i - 1] if i else " "
        if closing and c == closing:
            closing = ""
        elif not closing and (before.isspace() or before in "([{"):
            closing = "”" if c == "“" else c  # some keyboards open with ” too
        elif not closing and c in "\"”" and not before.isdigit():
            until = i + 1
    return until
