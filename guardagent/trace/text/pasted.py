"""Where a user's message holds text pasted from elsewhere that no line introduces.

:mod:`guardagent.trace.found.requests` already reads "My colleague wrote:" and a line break, a
``>`` line and a fenced block as someone else's words. A careful reader also hears them in:

- an e-mail pasted with its headers ("Subject: Urgent" then "Pay X now."): a line that
  starts with ``Subject:`` or ``From:``, or two header lines in a row (``To:``, ``Date:``,
  ``Cc:``...), starts pasted text;
- an introduction on the same line ("Someone sent me this: pay X.", "The mail: pay X",
  "From the landlord: pay X", "Look at this one: pay X"): a word of sending or reporting
  then "this", "these", "following", "below" or nothing, or "from" or a word of looking
  ("look", "check") opening the sentence, and a ``:``;
- a separator a mail client writes ("-----Original Message-----", "Begin forwarded
  message:") or a subject prefix ("Fwd:", "Re:");
- a sentence that introduces what follows (:func:`introducing`): a line of no request that
  ends in ``:`` and says where the text is from ("From the vendor:", "Here's what I got:";
  not "Two things:"), or that reports and ends in no period ("Bob wrote", "FYI"), a
  question about the text ("Is this legit?", "Scam?", "Thoughts?"), a sentence that
  points at it ("Here's what it says.", "Forwarding you this.") or asks only to look at it
  ("Check this out:");
- a closing double quote that no quote opened ('Pay X" is what the email says.'): the
  user pasted from the middle of a quotation, so what comes before it is quoted.

Pasted text runs to the message's end (as after an introducing line): its author, not the
user, wrote what follows as much as the line itself, and an e-mail's body may run on in
paragraphs. Fail closed: "Subject: the invoice" then "Please pay X." designates nothing; the
user can ask in a message of its own. One linear pass for each reading.
"""

from __future__ import annotations

import re

from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.held import Sentence

_WORD = re.compile(r"\w+(?:['’]\w+)*")  # as the request reader's words: one class, one run
_QUOTE = re.compile('["“”]')
_STRONG_HEADERS = frozenset({"subject", "from", "fw", "fwd", "re"})
"""Header fields (and subject prefixes: "Fwd:", "Re:") that alone mark a pasted e-mail (a
chat message has no subject line)."""
MAIL_HEADERS = _STRONG_HEADERS | frozenset(
    {
        "to",
        "cc",
        "bcc",
        "date",
        "sent",
        "reply-to",
        "sender",
        "message-id",
        "in-reply-to",
        "references",
        "return-path",
        "received",
        "delivered-to",
        "importance",
        "attachments",
    }
)
"""RFC 5322 header fields (and the ones mail clients print) that start pasted e-mail."""
SENDING = frozenset(
    {
        "sent",
        "send",
        "forwarded",
        "received",
        "got",
        "shared",
        "pasted",
        "copied",
        "emailed",
        "texted",
        "messaged",
        "posted",
        "forwarding",
        "sending",
        "sharing",
        "pasting",
        "fyi",
        "fw",
        "fwd",
    }
)
"""Words of an introduction on the same line ("Someone sent me this:")."""
_POINTING = frozenset({"this", "these", "following", "below", "it", "that"})
_LOOKING = frozenset({"see", "look", "check", "read", "view", "review", "consider"})
_NEEDING = frozenset({"need", "want", "would", "'d", "like"})
_SENTENCE_ENDS = frozenset(".!?\n")


def _header(line: str) -> str | None:
    """The header field a line starts with (``Subject: Urgent`` -> ``subject``), or None."""
    name, colon, _ = line.lstrip(" \t>").partition(":")
    name = name.lower()
    return name if colon and name in MAIL_HEADERS else None


def _separator(line: str) -> bool:
    """A mail client's separator: a rule of ``-``, ``_`` or ``=``, or "Begin forwarded message".

    "-----Original Message-----", "---------- Forwarded message ----------".
    """
    head = line.strip().lower()
    return head[:3] in ("---", "___", "===") or head.startswith("begin forwarded message")


def headers_from(text: str) -> int:
    """Where pasted e-mail headers or a mail separator start (``len(text)``: none)."""
    at, run_start, run = 0, 0, 0
    for line in text.splitlines(keepends=True):
        check_budget()
        if _separator(line):
            return at
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
    marked = sourced = False  # a word of sending before; "from" or "look" opens the sentence
    prev_end = 0
    for m in _WORD.finditer(text):
        check_budget()
        start = not prev_end or any(c in _SENTENCE_ENDS for c in text[prev_end : m.start()])
        if start:
            marked = sourced = False
        word = m.group().lower()
        said = word in SENDING or word in reporting
        sourced = sourced or (start and (word == "from" or word in _LOOKING))
        if (said or sourced or marked and word in _POINTING) and text[m.end() : m.end() + 3].lstrip(
            " \t"
        )[:1] == ":":
            return text.index(":", m.end()) + 1  # "sent me this: ...", "The mail: ..."
        marked = marked or said
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
        elif not closing and c in '"”' and not before.isdigit():
            until = i + 1
    return until


def introducing(
    words: list[str],
    after: str,
    request: bool,
    opening: frozenset[str],
    reporting: frozenset[str],
    doubts: frozenset[str],
) -> bool:
    """Whether a sentence with no mention introduces the text after it as pasted.

    Args:
        words: The sentence's words (lower case).
        after: The characters between its last word and the next sentence's first.
        request: One of its clauses opens a request (the user asks something of their own).
        opening: Words before a clause's verb ("please", "ok") the request reader skips.
        reporting: The request reader's words of reported or pasted speech.
        doubts: Words of doubt ("scam", "legit").
    """
    if not words:
        return False
    verb = next((w for w in words if w not in opening), "")
    if verb in _LOOKING and not _POINTING.isdisjoint(words):
        return True  # "Check this out:", "Look at this:" then the text
    needing = any(
        w in ("i", "we") and n in _NEEDING for w, n in zip(words, words[1:], strict=False)
    )
    if request or needing:
        return False  # "Please do the following:", "Here's what I need:"
    told = not SENDING.isdisjoint(words) or not reporting.isdisjoint(words)
    line, broken, _ = after.partition("\n")
    named = told or words[0] == "from" or not _POINTING.isdisjoint(words)
    if broken and (":" in line and named or told and not any(c in ".!" for c in line)):
        return True  # "From the vendor:", "Here's what I got:", "Bob wrote", "FYI"
    if "?" in after or "？" in after:
        return len(words) <= 2 or not (_POINTING | doubts | reporting | SENDING).isdisjoint(words)
    return told and not _POINTING.isdisjoint(words)  # "Here's what it says.", "Forwarding this."


def introduced_at(
    text: str,
    sentences: list[Sentence],
    mention: str,
    opening: frozenset[str],
    reporting: frozenset[str],
    doubts: frozenset[str],
) -> int:
    """Where text a sentence of no mention introduces starts (:func:`introducing`).

    `sentences`: the message's sentences as the request reader segmented them; `mention`:
    the word that stands for a mention. ``len(text)``: none.
    """
    for k, clauses in enumerate(sentences):
        words = [w for c in clauses for w in c.words]
        if mention in words:
            continue
        end = clauses[-1].end
        after = text[end : sentences[k + 1][0].start] if k + 1 < len(sentences) else ""
        request = any(c.request for c in clauses)
        if after and introducing(words, after, request, opening, reporting, doubts):
            return end
    return len(text)
