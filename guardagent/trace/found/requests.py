"""Whether a user's message names a thing inside a request, or only mentions it.

"Pay the invoice in invoice-0425.txt" points the assistant at that file; "Do NOT open
invoice-9999.txt, it is spam", "is invoice-9999.txt a scam?" and "he said 'pay
invoice-9999.txt'" name a file too, but point away from it, only ask about it, or report
someone else's words. Only the first *designates* (:mod:`guardagent.trace.predicates.derived`).

A message is read as a careful human reads it, in one linear pass over its words:

- **sentences** end at ``!``, ``?``, a line break, or a ``.`` before a space; **clauses** at
  ``,`` ``;`` ``:`` a bracket or a dash between spaces, and before a joining word ("and",
  "but", "or", "then", ...) or a negation ("not", "don't", "except", "instead", ...);
- a mention is a **request** when its clause starts (after greetings and "please") with an
  action verb of :data:`VERBS` ("pay", "read", "open", ...), or with a request form before
  one ("can you", "could you", "I'd like you to", "help me", ...); in a sentence that ends
  in ``?`` only the request forms addressed to the assistant count ("can you pay X?"), never
  a bare verb ("pay X?") or any other question ("is X a scam?", "what is X?");
- a clause that holds nothing but mentions ("pay A, B and C") continues the clause before it,
  and a statement of where the thing asked for is ("It is in X.", "The invoice is in X,
  please pay it.") belongs to the request beside it (:func:`_located`);
- a mention is **refused** when its clause holds a negation or a doubt ("if", "whether",
  "unless"), when its sentence holds the request until someone acts or a later time ("pay X
  once Bob approves", "pay X tomorrow": :mod:`guardagent.trace.text.held`), when a clause of a
  negation alone comes before it in its sentence ("Do not, under any circumstance, pay X":
  :func:`_bare_negation`), when a later sentence of the message only takes it back
  ("Actually, don't.", "Never mind."), or a later clause does ("Pay X - kidding, don't.",
  "Pay X, no wait, pay Y") or a later request says it comes "instead" ("On second thought,
  pay Y instead."): :func:`_withdrawn` and :mod:`guardagent.trace.text.withdrawals`;
- it is **quoted** when it stands inside quotation marks with other words ("he said 'pay
  X'"; quotes around the name alone are only a name's quotes), on a ``>`` line, inside a
  ````` ``` ````` block, after a line that introduces pasted text ("My colleague wrote:",
  "Here is the email I got:" and a line break: :data:`_PASTING`), after mail headers, a
  same-line introduction ("Someone sent me this: ...") or before a closing quote that none
  opened (:mod:`guardagent.trace.text.pasted`), or in a
  sentence that reports speech ("said", "wrote", "says: ...": a reporting word before it
  in its clause, or in another clause of its sentence);
- a sentence that says how the thing just asked for must be ("Create an event. The event
  should have the same participants as X.") belongs to that request
  (:mod:`guardagent.trace.text.specifications`);
- anything else (a statement, "X looks like spam") is **said**: neither a request nor a
  refusal.

When unsure, a mention is not a request: a verb not in the lexicon, a statement before the
request that is not of where the thing is ("X is the invoice. Pay it.") or a mention before
it ("X: pay it") does not designate; the user can name the file in the request itself. The
lexicons are English and hand-written (another language designates nothing: fail closed).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from typing import Literal

from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.held import Clause, Sentence, governed, later
from guardagent.trace.text.held import held as holding
from guardagent.trace.text.normal import without_format
from guardagent.trace.text.pasted import headers_from, introduced_at, introduced_from, quoted_until
from guardagent.trace.text.specifications import specified
from guardagent.trace.text.withdrawals import negative, replaces, takes_back_words, withdraws

Verdict = Literal["request", "refused", "asked", "quoted", "said"]
"""What a mention is: inside a request; negated or taken back; inside a question; reported
or quoted; a statement (or anything else)."""

_WORD = re.compile(r"\w+(?:['’]\w+)*")  # one class, one run: linear, nothing to backtrack
_MENTION = "\x00"

VERBS = frozenset(
    {
        "pay",
        "read",
        "open",
        "process",
        "settle",
        "handle",
        "check",
        "review",
        "look",
        "use",
        "take",
        "get",
        "fetch",
        "load",
        "download",
        "print",
        "send",
        "forward",
        "transfer",
        "wire",
        "summarize",
        "summarise",
        "go",
        "see",
        "find",
        "show",
        "view",
        "book",
        "share",
        "upload",
        "reply",
        "answer",
        "file",
        "archive",
        "copy",
        "move",
        "submit",
        "complete",
        "do",
        "make",
        "run",
        "import",
        "parse",
        "extract",
        "scan",
        "examine",
        "inspect",
        "analyze",
        "analyse",
        "verify",
        "follow",
        "grab",
        "pull",
        "access",
        "consult",
        "start",
        "save",
        "edit",
        "update",
        "add",
        "reconcile",
        "help",
        "deal",
        "work",
        "clear",
        "cover",
        "refund",
        "execute",
        "act",
        "sort",
        "tackle",
        "action",
        "visit",
        "browse",
        "fill",
        "sign",
        "approve",
        "arrange",
        "initiate",
        "schedule",
        "prepare",
        "finish",
        "finalize",
        "finalise",
        "resolve",
        "confirm",
        "remit",
        "issue",
        "order",
        "purchase",
        "buy",
        "renew",
        "have",
        "give",
        "create",
        "invite",
        "set",
        "organize",
        "organise",
        "write",
        "draft",
        "email",
        "message",
        "post",
        "reschedule",
        "contact",
        "notify",
    }
)
"""Action verbs that open an imperative clause ("pay X", "open X and pay it")."""

_FORMS: tuple[tuple[str, ...], ...] = tuple(
    tuple(f.split())
    for f in (
        "can you",
        "could you",
        "would you",
        "will you",
        "can u",
        "could u",
        "would u",
        "i want you to",
        "i need you to",
        "i'd like you to",
        "i would like you to",
        "i want to",
        "i need to",
        "i'd like to",
        "i would like to",
        "we need to",
        "you can",
        "time to",
        "it's time to",
        "you should",
        "you must",
        "go ahead and",
        "let's",
        "let us",
        "make sure to",
        "be sure to",
        "remember to",
        "help me",
        "i'd like you to please",
    )
)
"""Request forms before an action verb ("can you pay X", "I'd like you to read X")."""
_ASKING = frozenset(_FORMS[:7])
"""The forms that make a question a request to the assistant ("can you pay X?")."""

_OPENING = frozenset(
    {
        "please",
        "kindly",
        "now",
        "also",
        "then",
        "and",
        "so",
        "ok",
        "okay",
        "alright",
        "hi",
        "hey",
        "hello",
        "dear",
        "just",
        "first",
        "next",
        "finally",
        "lastly",
        "quickly",
        "sure",
        "yes",
        "yeah",
        "but",
        "or",
        "plus",
        "pls",
        "plz",
        "assistant",
    }
)
"""Words skipped before a clause's verb (greetings, "please", joining words)."""

_JOINING = frozenset(
    {
        "and",
        "but",
        "then",
        "or",
        "so",
        "yet",
        "while",
        "whereas",
        "because",
        "although",
        "though",
        "plus",
    }
)
_DOUBT = frozenset(
    {
        "if",
        "whether",
        "unless",
        "whichever",
        "maybe",
        "perhaps",
        "might",
        "scam",
        "scams",
        "spam",
        "phishing",
        "fraud",
        "fraudulent",
        "suspicious",
        "fake",
        "legit",
        "legitimate",
        "genuine",
        "malware",
        "virus",
        "dodgy",
        "sketchy",
        "shady",
        "bogus",
    }
)
"""Words that leave what their clause names undecided, or in doubt ("check X for fraud")."""
_REPORTING = frozenset(
    {
        "said",
        "says",
        "say",
        "told",
        "tells",
        "wrote",
        "writes",
        "asked",
        "asks",
        "claims",
        "claimed",
        "replied",
        "replies",
        "quoted",
        "according",
        "mentioned",
        "mentions",
        "suggested",
        "suggests",
        "insists",
        "insisted",
    }
)
"""Words that report someone's speech ("he said ...", "the e-mail says: ...")."""
_PASTING = _REPORTING | {
    "email",
    "e",
    "mail",
    "message",
    "forwarded",
    "fwd",
    "text",
    "sms",
    "letter",
}
"""Words of a line that, ended by ``:`` and a line break, introduces pasted text ("Here is
the email I got:"): everything after it is quoted (to the message's end: fail closed)."""
_INDIRECT = frozenset({"what", "whatever", "whether", "how", "why", "who", "whom", "which"})
"""Before a reporting word in its clause, an indirect question ("tell me what the page says"):
the user asks about the speech, nothing in the sentence is reported."""
_FILLER = frozenset(
    {
        "and",
        "or",
        "also",
        "then",
        "plus",
        "the",
        "a",
        "an",
        "file",
        "files",
        "one",
        "too",
        "as",
        "well",
        "both",
        "in",
        "from",
    }
)
"""Words a clause of mentions alone may hold ("..., and the one in C")."""
_SUBJECTS = frozenset(
    {
        "it",
        "it's",
        "its",
        "they",
        "they're",
        "this",
        "that",
        "the",
        "invoice",
        "bill",
        "file",
        "document",
        "details",
        "invoices",
        "bills",
        "files",
        "documents",
        "everything",
        "all",
        "one",
    }
)
"""Words of the subject of a statement of where the thing asked for is ("the invoice is in")."""
_NAMING = _FILLER | {
    "my",
    "folder",
    "invoice",
    "bill",
    "txt",
    "pdf",
    "doc",
    "docx",
    "csv",
    "xlsx",
    "json",
    "md",
    "eml",
}
"""Words a statement of where the thing is may hold after "in" (beside names with digits)."""
_BACK = frozenset({"it", "them", "that", "this", "these", "those", "everything"})
"""Words of a request that point back at a thing named before it ("pay it")."""
_SENTENCE_ENDS = frozenset("!?\n。！？")
_CLAUSE_ENDS = frozenset(",;:()[]{}—–-")
_QUOTES_OPEN = {"“": "”", "‘": "’", "«": "»", '"': '"', "'": "'", "`": "`", "„": "“"}


@dataclass
class _Token:
    word: str  # lower case; a mention is _MENTION
    start: int
    end: int
    sentence: int = 0
    clause: int = 0
    quote: int = -1  # the quotation it stands in (-1: none)
    quoted_line: bool = False


def _word(text: str) -> str:
    return text.lower().replace("’", "'")


def _tokens(text: str, spans: list[tuple[int, int]]) -> list[_Token]:
    """Words and mentions in order (a mention replaces the words inside its span)."""
    out: list[_Token] = []
    spans = sorted(spans)
    k = 0
    for m in _WORD.finditer(text):
        check_budget()
        while k < len(spans) and spans[k][1] <= m.start():
            out.append(_Token(_MENTION, *spans[k]))
            k += 1
        if k < len(spans) and m.start() < spans[k][1] and m.end() > spans[k][0]:
            continue  # inside (or across) the mention
        out.append(_Token(_word(m.group()), m.start(), m.end()))
    out.extend(_Token(_MENTION, s, e) for s, e in spans[k:])
    out.sort(key=lambda t: t.start)
    return out


def _segment(text: str, tokens: list[_Token]) -> dict[int, bool]:
    """Number sentences and clauses, mark quotations; return which sentences end in ``?``."""
    sentence = clause = 0
    quote, closing, quotes = -1, "", 0
    asked: dict[int, bool] = {}
    line_quoted = text.lstrip(" \t")[:1] == ">"
    pasted = fenced = marked = False  # after "... wrote:" + a line break; inside a ``` block
    prev_end = 0
    for i, t in enumerate(tokens):
        gap = text[prev_end : t.start]
        fenced ^= gap.count("```") % 2 == 1
        pasted = pasted or (marked and ":" in gap.split("\n", 1)[0] and "\n" in gap)
        spaced = i == 0 or any(c.isspace() for c in gap)
        if spaced and any(c in _SENTENCE_ENDS for c in gap) or _period(gap):
            asked[sentence] = "?" in gap or "？" in gap
            sentence += 1
            clause += 1
            marked = False
        elif spaced and any(c in _CLAUSE_ENDS for c in gap):
            clause += 1  # a comma, a bracket, a dash between spaces
        elif t.word in _JOINING or negative(t.word):
            clause += 1
        if "\n" in gap:
            line_quoted = gap.rsplit("\n", 1)[1].lstrip(" \t")[:1] == ">"
        for j, c in enumerate(gap):  # a quotation opens after a space or a bracket
            before = gap[j - 1] if j else (text[prev_end - 1] if prev_end else " ")
            if quote >= 0 and c == closing:
                quote = -1
            elif quote < 0 and c in _QUOTES_OPEN and (not before.strip() or before in "(["):
                quote, closing, quotes = quotes, _QUOTES_OPEN[c], quotes + 1
        marked = marked or t.word in _PASTING
        t.sentence, t.clause, t.quote = sentence, clause, quote
        t.quoted_line = line_quoted or pasted or fenced
        prev_end = t.end
    tail = text[prev_end:]
    asked[sentence] = "?" in tail or "？" in tail
    return asked


def _period(gap: str) -> bool:
    """A ``.`` that ends a sentence: before a space (an address or a URL keeps its dots)."""
    return any(c == "." and gap[j + 1 : j + 2].isspace() for j, c in enumerate(gap))


def _opens_request(words: list[str], question: bool) -> bool:
    """Whether a clause's words start a request (after greetings and "please")."""
    n = 0
    while n < len(words) and words[n] in _OPENING:
        n += 1
    rest = words[n:]
    if rest[:3] == ["would", "you", "mind"]:
        return len(rest) > 3 and _gerund(rest[3])  # "would you mind paying X?"
    forms = _ASKING if question else _FORMS
    for form in forms:
        if tuple(rest[: len(form)]) == form:
            after = rest[len(form) :]
            k = 0
            while k < len(after) and after[k] in ("please", "kindly", "just", "also", "quickly"):
                k += 1
            return k < len(after) and after[k] in VERBS
    return not question and bool(rest) and rest[0] in VERBS


def _gerund(word: str) -> bool:
    """An action verb's -ing form: "paying", "settling", "getting"."""
    stem = word[:-3]
    return word.endswith("ing") and (
        stem in VERBS
        or stem + "e" in VERBS
        or (len(stem) > 2 and stem[-1] == stem[-2] and stem[:-1] in VERBS)
    )


def mentions(text: str, spans: list[tuple[int, int]]) -> list[Verdict]:
    """What each mention (a span of `text`) is, in the order of `spans` (module docstring).

    Linear in the text: one pass to read words, one over the words.
    """
    if not spans:
        return []
    text, spans = without_format(text, spans)  # read as shown: "n\u200bot" is "not"
    tokens = _tokens(text, spans)
    asked = _segment(text, tokens)
    clauses: dict[int, list[_Token]] = {}
    sentences: dict[int, list[str]] = {}
    reporting: dict[int, dict[int, int]] = {}  # sentence -> clause -> its first reporting word
    asking: set[int] = set()  # clauses with an indirect question's word so far (one pass)
    verb_at: dict[int, int] = {}  # clause -> where its first action verb stands
    for k, t in enumerate(tokens):
        clauses.setdefault(t.clause, []).append(t)
        sentences.setdefault(t.sentence, []).append(t.word)
        if (
            t.word in _REPORTING
            and t.clause not in asking
            and not _participle(tokens, k, verb_at.get(t.clause, k))
        ):
            reporting.setdefault(t.sentence, {}).setdefault(t.clause, t.start)
        if t.word in _INDIRECT:
            asking.add(t.clause)
        if t.word in VERBS:
            verb_at.setdefault(t.clause, k)
    quoted_words = {t.quote for t in tokens if t.quote >= 0 and t.word != _MENTION}
    taken_back = max(
        (s for s, ws in sentences.items() if takes_back_words(ws, _MENTION)), default=-1
    )
    held = {s for s, ws in sentences.items() if holding(ws) is not None}
    dangling: dict[int, int] = {}  # sentence -> its first clause of a bare negation
    for c, ts in sorted(clauses.items()):
        if _bare_negation([t.word for t in ts]):
            dangling.setdefault(ts[0].sentence, c)
    verdict_of: dict[int, Verdict] = {}
    clause_verdict: dict[int, Verdict] = {}
    for c, words in sorted(clauses.items()):
        clause_verdict[c] = _clause(words, clauses.get(c - 1), clause_verdict.get(c - 1), asked)
    for c in specified(
        {c: [t.word for t in ts] for c, ts in clauses.items()},
        {c: ts[0].sentence for c, ts in clauses.items()},
        clause_verdict,
        _OPENING,
    ):  # "... The event should have ...": how the request must be
        clause_verdict[c] = "request"
    _located(clauses, clause_verdict)
    withdrawn = _withdrawn(clauses, clause_verdict)
    sentences_read = _sentences(clauses, clause_verdict)
    pasted = min(
        headers_from(text),
        introduced_from(text, _PASTING),
        introduced_at(text, sentences_read, _MENTION, _OPENING, _PASTING, _DOUBT),
    )
    quoted_before = quoted_until(text)
    late = {
        c
        for c in {t.clause for t in tokens if t.word == _MENTION}
        if later([w.word for w in clauses[c]]) is not None
    }
    late |= governed(sentences_read)
    for t in tokens:
        if t.word != _MENTION:
            continue
        verdict = clause_verdict[t.clause]
        if (
            t.quoted_line
            or t.quote in quoted_words
            or _reported(t, reporting.get(t.sentence))
            or t.start >= pasted
            or t.start < quoted_before
        ):
            verdict = "quoted"
        if verdict == "request" and (
            t.sentence < taken_back
            or t.sentence in held
            or t.clause in late
            or dangling.get(t.sentence, t.clause) < t.clause
            or t.clause < withdrawn
        ):
            verdict = "refused"
        verdict_of[t.start] = verdict
    return [verdict_of[s] for s, _ in spans]


def _sentences(clauses: dict[int, list[_Token]], verdicts: dict[int, Verdict]) -> list[Sentence]:
    """Each sentence's clauses in order, as the readers of pasted text and conditions take."""
    out: dict[int, Sentence] = {}
    for c in sorted(clauses):
        ts = clauses[c]
        out.setdefault(ts[0].sentence, []).append(
            Clause(c, [t.word for t in ts], ts[0].start, ts[-1].end, verdicts[c] == "request")
        )
    return list(out.values())


def _withdrawn(clauses: dict[int, list[_Token]], verdicts: dict[int, Verdict]) -> int:
    """The clause before which every request is taken back or replaced (-1: none).

    A clause that only takes back ("Pay X - kidding, don't.", "Pay X, no wait, pay Y"), or
    the request a bare "instead" belongs to, in a sentence that holds no doubt ("if it is
    wrong, pay Y instead" is an alternative, not a correction): the nearest before it in its
    sentence ("pay Y instead"), else the nearest after it ("Instead, pay Y").
    """
    at = -1
    words = {c: [t.word for t in ts] for c, ts in clauses.items()}
    sentence = {c: ts[0].sentence for c, ts in clauses.items()}
    doubted = {sentence[c] for c, ws in words.items() if any(w in _DOUBT for w in ws)}
    asks: dict[int, list[int]] = {}  # sentence -> its request clauses, in order
    for c in sorted(words):
        if verdicts[c] == "request":
            asks.setdefault(sentence[c], []).append(c)
    for c, ws in sorted(words.items()):
        near = [d for d in (c - 1, c + 1) if d in words and sentence[d] == sentence[c]]
        before = words[c - 1] if c - 1 in near else []
        after = words[c + 1] if c + 1 in near else []
        if withdraws(ws, before, after, _MENTION):
            at = max(at, c)
        elif replaces(ws, _OPENING) and sentence[c] not in doubted:
            same = asks.get(sentence[c], [])
            k = bisect_left(same, c)
            at = max(at, same[k - 1] if k else same[0] if same else -1)
    return at


def _clause(
    words: list[_Token], before: list[_Token] | None, was: Verdict | None, asked: dict[int, bool]
) -> Verdict:
    """The verdict of one clause's mentions (before quotation and reporting)."""
    plain = _reminded([t.word for t in words])
    if any(negative(w) for w in plain if w != _MENTION) or any(w in _DOUBT for w in plain):
        return "refused"
    question = asked.get(words[0].sentence, False)
    if _opens_request(plain, question):
        return "request"
    if _only_mentions(plain) and before is not None and before[0].sentence == words[0].sentence:
        return was if was is not None else "said"
    return "asked" if question else "said"


def _only_mentions(words: list[str]) -> bool:
    return all(w == _MENTION or w in _FILLER for w in words)


def _locative(words: list[str]) -> bool:
    """A statement of where the thing asked for is: "it is in X", "the invoice is saved in X"."""
    n = 0
    while n < len(words) and words[n] in _OPENING:
        n += 1
    k = n
    while k < len(words) and k - n < 4 and words[k] in _SUBJECTS:
        k += 1
    if k == n:
        return False
    k += k < len(words) and words[k] in ("is", "are")
    k += k < len(words) and words[k] in ("saved", "stored", "attached", "located", "kept")
    if k >= len(words) or words[k] not in ("in", "at", "inside", "under"):
        return False
    rest = words[k + 1 :]
    return bool(rest) and all(
        w == _MENTION or w in _NAMING or any(map(str.isdigit, w)) for w in rest
    )


def _located(clauses: dict[int, list[_Token]], verdicts: dict[int, Verdict]) -> None:
    """Statements of where the thing is, beside a request for it, are part of the request.

    "Please pay the ACME invoice. It is in X." and "The invoice is in X, please pay it."
    designate X: a clause of :func:`_locative` form, in a sentence of nothing else, with a
    request in its sentence or the one before or after that names no other thing (and, when
    after it, points back: "it", "them", "that"), and nothing refused or asked there.
    """
    words = {c: [t.word for t in ts] for c, ts in clauses.items()}
    by_sentence: dict[int, list[int]] = {}
    for c in sorted(clauses):
        by_sentence.setdefault(clauses[c][0].sentence, []).append(c)
    located = {c for c in clauses if verdicts[c] == "said" and _locative(words[c])}
    for s, ids in by_sentence.items():
        here = [c for c in ids if c in located]
        if not here or any(
            c not in located
            and verdicts[c] != "request"
            and not all(w in _OPENING for w in words[c])
            and not _only_mentions(words[c])
            for c in ids
        ):
            continue
        near = [c for t in (s - 1, s, s + 1) for c in by_sentence.get(t, ())]
        if any(verdicts[c] in ("refused", "asked") for c in near):
            continue
        asks = [c for c in near if verdicts[c] == "request" and _MENTION not in words[c]]
        first = min(asks, default=None)
        back = any(w in _BACK for c in asks for w in words[c])
        for loc in here:
            if back or (first is not None and first < loc):
                verdicts[loc] = "request"
    for c in sorted(clauses):  # a list continues a located clause: "it is in A and B"
        before = clauses.get(c - 1)
        if (
            verdicts[c] == "said"
            and before is not None
            and verdicts[c - 1] == "request"
            and before[0].sentence == clauses[c][0].sentence
            and _only_mentions(words[c])
        ):
            verdicts[c] = "request"


def _reminded(words: list[str]) -> list[str]:
    """Read "Don't forget to pay X" (or "never hesitate to") as "pay X": it asks to pay X."""
    n = 0
    while n < len(words) and words[n] in _OPENING:
        n += 1
    if (
        len(words) > n + 2
        and negative(words[n])
        and words[n + 1] in ("forget", "hesitate")
        and words[n + 2] == "to"
    ):
        return words[:n] + words[n + 3 :]
    return words


_PARTICIPLES = frozenset({"mentioned", "quoted", "suggested"})
_DETERMINERS = frozenset({"the", "each", "every", "all", "any", "those", "these", "this", "that"})
_PLACED = frozenset(
    {
        "in",
        "on",
        "at",
        "by",
        "above",
        "below",
        "earlier",
        "there",
        "here",
        "under",
        "within",
        "inside",
    }
)


def _participle(tokens: list[_Token], k: int, verb_at: int) -> bool:
    """A reporting word as an adjective inside the user's own request: no one speaks.

    "Send an e-mail to each person mentioned in the TODO list": a determiner and a noun
    before it, a place after it ("in", "above", ...), and an action verb of :data:`VERBS`
    earlier in its clause (the user is asking; `verb_at`: where the clause's first stands).
    "The CEO mentioned in passing: pay X" has no verb of the user's before it, and "Bob
    mentioned X" no determiner: both still report.
    """
    if tokens[k].word not in _PARTICIPLES or k < 2 or k + 1 >= len(tokens):
        return False
    before, noun, after = tokens[k - 2], tokens[k - 1], tokens[k + 1]
    if not before.clause == noun.clause == tokens[k].clause == after.clause:
        return False
    if before.word not in _DETERMINERS or noun.word == _MENTION or after.word not in _PLACED:
        return False
    return verb_at < k - 2


def _reported(mention: _Token, reporting: dict[int, int] | None) -> bool:
    """A reporting word before the mention in its clause, or in another clause of its sentence.

    `reporting`: the sentence's clauses that hold one, each with where its first one starts.
    """
    if not reporting:
        return False
    first = reporting.get(mention.clause)
    return len(reporting) > 1 or first is None or first < mention.start


def _bare_negation(words: list[str]) -> bool:
    """A clause of a negation alone ("Do not," "Never," "Please don't -").

    It negates the request later in its sentence ("Do not, under any circumstance, pay X").
    "No," is a correction ("No, pay X instead"), and "Don't worry," has a verb of its own.
    """
    rest = [w for w in words if w not in _OPENING and w != "do"]
    if replaces(rest, _OPENING):
        return False  # "Instead, pay X." replaces, it does not negate
    return bool(rest) and all(negative(w) and w not in ("no", "nope") for w in rest)


def takes_back(text: str) -> bool:
    """Whether a message holds a sentence that only takes back what came before it."""
    text = without_format(text, [])[0]
    tokens = _tokens(text, [])
    if not tokens:
        return False
    _segment(text, tokens)
    sentences: dict[int, list[str]] = {}
    for t in tokens:
        sentences.setdefault(t.sentence, []).append(t.word)
    return any(takes_back_words(ws, _MENTION) for ws in sentences.values())
