"""Consent asked in the conversation: the user's "yes" to the assistant's question (opt-in).

Many agents ask before acting ("May I delete the project `planner`?") and the user answers
in the chat. With ``consent_given(conversation=True)`` that answer approves the call, under
every one of these conditions (else it does not, and the fact says which one failed):

- the **answer** is the thread's last user message, and it is a ``user`` message: text in a
  tool result or in the model's own messages never counts;
- it comes right after an **assistant message that ends with a question** (its last
  sentence ends in ``?``; markup or quotes may close around it) and makes no call: a user
  message that answers no question never counts, nor a question buried earlier in the
  message or followed by more text (:func:`final_question`);
- the question **names this call**: its tool (``delete_project`` as "delete the project",
  or its verb "delete" as a word of its own; a misspelt tool word passes at ``similarity``
  50-100 with ``rapidfuzz``, default 85, but never a word that holds it: "undelete") *and*
  every one of its argument values, exactly (``match="both"``, the default: "May I delete
  planner?" approves neither deleting ``notes`` nor ``planner2``, and "May I send CHF 50 to
  <IBAN>?" not CHF 5,000 to it). Typed values are compared by their key (an IBAN
  re-spaced, an amount regrouped, "4,950.00" for 4950, an address case-folded), other
  values as the same run of whole words (case-folded; punctuation kept but for quotes and
  brackets around a word and a clause mark after it: ``../planner`` and ``planner*`` are
  not ``planner``); a value
  with an invisible character is never named. A flag (a boolean or null argument:
  ``force=True``) is named by its argument's name, and its value when not true
  (:class:`_Flag`). A call with no value at all is named by its
  tool; values longer than :data:`MAX_TARGET_CHARS` (a message body) are content, not
  targets, so a call whose every value is content is named by no question.
  Values of one kind in two or more arguments must be named in the order of the label's
  ``args`` (:func:`_in_order`: roles cannot swap). ``match="either"`` takes the tool *or*
  all values (looser: for tools whose calls the user
  tells apart by either). With ``arg``, every value of that argument must be named (and the
  other arguments need not be);
- the question is **plain**: it holds no negation, no alternative
  or the opposite (:data:`QUESTION_STOPS`: "not", "or", "rather", "instead", "keep",
  "already", any "...n't"), no invisible or direction character and no markup a chat may
  show without its text (an HTML tag or comment, a Markdown link): a question shown
  otherwise than it reads; "Should I not delete planner?", "Delete planner or notes?" and
  "May I delete planner? Or keep it?" approve nothing;
- the answer **says yes**: it starts with an affirmative (:data:`AFFIRMATIVE`: "yes", "ok",
  "go ahead", ...) and holds no negation or reservation (:data:`NEGATIVE`: "no", "don't",
  "not", "wait", "but", "instead", any "...n't") and no question mark: "No", "Yes, but not
  now", "Don't" and "Yes?" never count;
- it approves **one call, once**: an earlier call after the answer that the question also
  names used it, and so does any call the thread's ledger recorded
  (:mod:`~guardagent.trace.predicates.ledger`).

The fact names the answer and the question (``sources``: the user's message, then the
model's). The lexicons are English and hand-written; an answer in another language is not
read as a yes (fail closed).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from guardagent.trace.messages import Message, ToolCall
from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.predicates.fact import Fact
from guardagent.trace.predicates.options import under
from guardagent.trace.provenance import SourceRef
from guardagent.trace.state import flatten
from guardagent.trace.values import extract_values, normalize_text, read_scalar

MATCHES = ("both", "either")
"""How a question must name the call: its tool and a value (``both``), or ``either``."""

_CLOSING = " \t\r\n*_`\"')]}»”’"
"""What may follow the final question (markup and quotes closing around it)."""

MAX_TARGET_CHARS = 200
"""Argument values longer than this are content, not a target a question names."""

AFFIRMATIVE: tuple[tuple[str, ...], ...] = tuple(tuple(p.split()) for p in (
    "yes", "y", "yeah", "yep", "yup", "sure", "ok", "okay", "alright", "all right",
    "approved", "approve", "i approve", "confirmed", "confirm", "i confirm", "proceed",
    "please proceed", "go ahead", "please go ahead", "please do", "do it", "absolutely",
    "of course", "certainly", "definitely", "correct", "that's fine", "fine", "sounds good",
    "agreed", "i agree",
))  # fmt: skip
"""Answers that start with one of these phrases (whole words) say yes."""

NEGATIVE = frozenset({
    "no", "nope", "nah", "not", "never", "dont", "cancel", "stop", "wait", "hold", "abort",
    "reject", "rejected", "deny", "denied", "refuse", "negative", "neither", "nor", "without",
    "but", "instead", "except", "only", "unless", "later", "rather", "maybe", "perhaps",
})  # fmt: skip
"""Words that make an answer something other than a plain yes (so never consent)."""

_SENTENCE_ENDS = frozenset("!?\n。！？")
_QUESTION_ENDS = frozenset("?？")
# One separator between two digits. No quantifier: constant work per position, linear over
# attacker text (RE2 has no lookaround, and its substitution callback costs 30x here).
_DIGIT_GROUPS = re.compile(r"(?<=[0-9])[,'’_\u202f\u00a0 ](?=[0-9])")


def _clean(text: str) -> str:
    """Text for fuzzy matching: NFKC, lower case, words only, digit groups joined.

    "4,950" and "4 950" read as 4950: a separator between two digits is dropped.
    """
    text = _DIGIT_GROUPS.sub("", unicodedata.normalize("NFKC", text))
    return " ".join(default_process(text).split())


def _words(name: str) -> str:
    """A tool's name as words: ``delete_project`` and ``deleteProject`` read "delete project"."""
    spaced: list[str] = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and name[i - 1].islower():
            spaced.append(" ")
        spaced.append(ch)
    return _clean("".join(spaced).replace("_", " ").replace("-", " ").replace(".", " "))


def questions(text: str) -> list[str]:
    """The sentences of a text that end with a question mark (a linear scan).

    A period ends a sentence only before a space or the end, so addresses and URLs stay whole.
    """
    found: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        ends = ch in _SENTENCE_ENDS or (ch == "." and (i + 1 == len(text) or text[i + 1].isspace()))
        if ends:
            if ch in _QUESTION_ENDS and text[start:i].strip():
                found.append(text[start:i + 1].strip())
            start = i + 1
    return found


def final_question(text: str) -> str | None:
    """The question a message ends with (its last sentence, when it ends in "?"), or None.

    A user's yes answers the question right above it: one buried earlier in the message, or
    followed by more text (a summary the user answered instead), is not what they said yes to.
    """
    asked = questions(text)
    if not asked or not text.rstrip(_CLOSING).endswith(asked[-1].rstrip(_CLOSING)):
        return None
    return asked[-1]


def _tokens(text: str) -> list[str]:
    """Lower-case words of an answer (letters, digits and apostrophes), in one pass."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'")
    words, current = [], []
    for ch in text:
        if ch.isalnum() or ch == "'":
            current.append(ch)
        elif current:
            words.append("".join(current).strip("'"))
            current = []
    if current:
        words.append("".join(current).strip("'"))
    return [w for w in words if w]


def says_yes(text: str) -> bool:
    """An answer that starts with an affirmative and holds no negation or reservation."""
    words = _tokens(text)
    if not words or any(w in NEGATIVE or w.endswith("n't") for w in words):
        return False
    if "?" in text or "？" in text:
        return False  # an answer that asks back ("Yes?", "OK, which one?") approves nothing
    return any(tuple(words[:len(p)]) == p for p in AFFIRMATIVE)


QUESTION_STOPS = NEGATIVE | {"or", "already", "undo", "restore", "keep"}
"""Words that make a question something other than "may I do this?" (negated, an
alternative, about the past or the opposite): a yes to it approves nothing."""


def _plain_question(question: str) -> bool:
    """A question a yes can approve: nothing hidden, negated or alternative.

    No invisible or direction character (shown otherwise than it reads), no word of
    :data:`QUESTION_STOPS` and no "...n't".
    """
    if any(unicodedata.category(ch) == "Cf" for ch in question):
        return False  # shown otherwise than it reads: never what the user saw
    if _hides_text(question):
        return False
    return not any(w in QUESTION_STOPS or w.endswith("n't") for w in _tokens(question))


def _hides_text(text: str) -> bool:
    """Markup a chat may render without its text: an HTML tag or comment, a Markdown link.

    ``<span hidden>planner2</span>`` and ``[](planner2)`` show nothing, yet their words
    would name a value; a question holding them is not what the user read (one scan).
    """
    for i, ch in enumerate(text[:-1]):
        after = text[i + 1]
        if (ch == "<" and (after.isalpha() or after in "/!?")) or (ch == "]" and after == "("):
            return True
    return False


def _phrase(text: str, *, question: bool = False) -> str:
    """Text as its whole words, joined by single spaces, with one at each end.

    Words are split at whitespace and keep their punctuation, except quotes and brackets
    around them and the marks that end a clause after them (``,`` ``;`` ``:`` ``!`` ``?``):
    ``../planner``, ``/planner`` and ``planner*`` are other values than ``planner`` (another
    directory, a glob over many). A question's words also lose a closing ``.`` and Markdown
    emphasis (``**planner**``), so a value ending in those is named by no question (fail
    closed). ``4,950`` reads 4950.
    """
    text = _DIGIT_GROUPS.sub("", unicodedata.normalize("NFKC", text).casefold())
    lead, trail = (_QUOTES + _EMPHASIS, _QUOTES + _EMPHASIS + _MARKS + ".") if question else (
        _QUOTES, _QUOTES + _MARKS)  # fmt: skip
    words = (w.lstrip(lead).rstrip(trail) for w in text.split())
    return " " + " ".join(w for w in words if w) + " "


_QUOTES = "\"'`()[]{}<>«»“”‘’„‚"
_EMPHASIS = "*_"
_MARKS = ",;:!?。！？、"


class _Question:
    """One question, read once: its words and the typed values inside it."""

    def __init__(self, text: str, region: str | None) -> None:
        self.text = text
        self.phrase = _phrase(text, question=True)
        self.words = _clean(text)
        found = extract_values(normalize_text(text), region=region)
        self.keys = frozenset(k for f in found for k in f.value.keys)
        self.first: dict[str, int] = {}  # key -> where it is first written (found in order)
        for f in found:
            for k in f.value.keys:
                self.first.setdefault(k, f.start)


class _Target:
    """One argument value the question must name, exactly.

    A typed value by its key (an IBAN re-spaced, an amount regrouped, an address
    case-folded), else as the same run of whole words; a value with an invisible character
    is never named (it looks like another).
    """

    def __init__(self, value: Any, region: str | None, arg: str = "") -> None:
        whole, _ = read_scalar(value, region=region)
        self.keys = frozenset(whole.keys) if whole is not None else frozenset()
        hidden = isinstance(value, str) and any(unicodedata.category(c) == "Cf" for c in value)
        self.phrase = "" if hidden else _phrase(str(value)).strip()
        self.arg = arg
        self.kind = whole.kind if self.keys and whole is not None else "phrase"

    def named_in(self, question: _Question) -> bool:
        if self.keys:
            return not self.keys.isdisjoint(question.keys)
        return bool(self.phrase) and f" {self.phrase} " in question.phrase

    def position(self, question: _Question) -> int:
        """Where the question first names it (comparable among targets of one kind)."""
        if self.keys:
            return min(question.first[k] for k in self.keys if k in question.first)
        return question.phrase.find(f" {self.phrase} ")


FLAG_WORDS: dict[bool | None, frozenset[str]] = {
    True: frozenset({"true", "on", "yes"}), False: frozenset({"false", "off"}),
    None: frozenset({"null", "none"}),
}  # fmt: skip
"""How a question writes a flag's value after its name (``force true``, ``dry_run=false``)."""
_NOT_TRUE = FLAG_WORDS[False] | FLAG_WORDS[None] | {"no", "0", "disabled"}


class _Flag:
    """A boolean or null argument: named by its argument's name, and its value when not true.

    ``force=True`` changes what ``delete_project("planner")`` does, so a question that
    never says "force" does not approve it. A true flag is named by its name's words as a
    run of whole words ("with force", "force-delete", "recursive=true"), unless the next
    word writes another value ("force false"); a false or null one by its name followed by
    its value ("dry_run: false", "backup=null"). The name is the path's last key
    (``options.purge``: "purge"; ``flags[0]``: "flags").
    """

    def __init__(self, path: str, value: bool | None) -> None:
        last = path.rsplit(".", 1)[-1].split("[", 1)[0]
        self.name = _words(last).split()
        self.value = value
        self.arg, self.kind = path, "flag"  # named by its own name: no role to swap

    def named_in(self, question: _Question) -> bool:
        words, size = question.words.split(), len(self.name)
        for i in range(len(words) - size + 1 if size else 0):
            if words[i:i + size] != self.name:
                continue
            after = words[i + size] if i + size < len(words) else ""
            if self.value is True and after not in _NOT_TRUE:
                return True
            if self.value is not True and after in FLAG_WORDS[self.value]:
                return True
        return False


def _targets(
    call: ToolCall, arg: str | None, region: str | None
) -> tuple[list[_Target | _Flag], int]:
    """The values a question must name, and how many values (content included) there are."""
    values: list[_Target | _Flag] = []
    count = 0
    for path, value in flatten(call.args):
        if arg is not None and not under(path, arg):
            continue
        count += 1
        if value is None or isinstance(value, bool):
            values.append(_Flag(path, value))
        elif len(str(value)) <= MAX_TARGET_CHARS:
            values.append(_Target(value, region, _top(path)))
    return values, count


def _top(path: str) -> str:
    """The top-level argument of a path (``payee.iban``: ``payee``; ``to[0]``: ``to``)."""
    return path.split(".", 1)[0].split("[", 1)[0]


ANY_ORDER = ("*",)
"""An `order` that accepts values in any order (to find earlier calls that used a yes)."""


def _in_order(targets: list[_Target | _Flag], question: _Question,
              order: tuple[str, ...] | None) -> bool:  # fmt: skip
    """Values of one kind in two or more arguments are named in the label's `args` order.

    "May I move planner to notes?" names both values of ``move_file(src="notes",
    dst="planner")``, with their roles swapped; two IBANs or two amounts swap the same way.
    The order is the deployer's (the label's ``args``): the call's own order is the model's
    to choose. Without it, such a call is named by no question. Values of different kinds
    (an IBAN, an amount) cannot take each other's place.
    """
    if order == ANY_ORDER:
        return True
    kinds: dict[str, list[_Target]] = {}
    for t in targets:
        if isinstance(t, _Target):
            kinds.setdefault(t.kind, []).append(t)
    for group in kinds.values():
        if len({t.arg for t in group}) < 2:
            continue
        if order is None or any(t.arg not in order for t in group):
            return False
        ranked = sorted(group, key=lambda t: order.index(t.arg))
        places = [t.position(question) for t in ranked]
        if places != sorted(places):
            return False
    return True


def _word_named(word: str, question: list[str], similarity: float) -> bool:
    """A word of the tool's name in the question: the same word, or a misspelling of it.

    A misspelling (``fuzz.ratio`` at least `similarity`) neither holds the word nor is held
    by it: "undelete", "deleted" and "delet" are other words, never "delete".
    """
    return any(w == word or (fuzz.ratio(word, w) >= similarity and word not in w
                             and w not in word) for w in question)  # fmt: skip


def _tool_named(tool: str, question: str, similarity: float) -> bool:
    """The tool's words ("delete project"), or its verb as a word of its own ("delete")."""
    words, asked = tool.split(), question.split()
    if not words:
        return False
    if len(words[0]) >= 3 and _word_named(words[0], asked, similarity):
        return True
    return all(_word_named(w, asked, similarity) for w in words)


class CallNames:
    """What a question must name to name a call, read once per call (see the module)."""

    def __init__(self, call: ToolCall, *, arg: str | None = None, similarity: float = 85,
                 match: str = "both", region: str | None = None,
                 order: tuple[str, ...] | None = None) -> None:  # fmt: skip
        self.tool = _words(call.name)
        self.targets, self.values = _targets(call, arg, region)
        self.arg, self.similarity, self.match, self.region = arg, similarity, match, region
        self.order = tuple(order) if order is not None else None

    def named_by(self, question: str | _Question) -> bool:
        """Whether a question names the call: its tool and every value, or either."""
        q = question if isinstance(question, _Question) else _Question(question, self.region)
        tool_named = _tool_named(self.tool, q.words, self.similarity)
        if self.arg is not None or self.values:  # every value (of the argument) named
            target_named = (bool(self.targets) and all(t.named_in(q) for t in self.targets)
                            and _in_order(self.targets, q, self.order))  # fmt: skip
        else:
            target_named = self.match == "both"  # no value at all: its tool names it
        if self.match == "both":
            return tool_named and target_named
        return target_named if self.arg is not None else tool_named or target_named


def names_call(question: str, call: ToolCall, **options: Any) -> bool:
    """Whether a question names a call (options as :class:`CallNames`)."""
    return CallNames(call, **options).named_by(question)


def _quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _identity(answer: Message) -> str:
    return f"c:{answer.index}:{answer.digest.hex()[:32]}"


def asked_in_conversation(facts: TraceFacts, *, arg: str | None = None,
                          similarity: float = 85, match: str = "both") -> Fact:  # fmt: skip
    """The user's last message says yes to the assistant's question naming this call."""
    msgs, call = facts.trace.messages, facts.trace.call
    options: dict[str, Any] = {"arg": arg, "similarity": similarity, "match": match}
    answer = next((m for m in reversed(msgs) if m.role == "user"), None)
    if answer is None:
        return Fact("consent_given", False, (), "no user message answers a question about it")
    where = SourceRef(answer.index, answer.source, "user")
    asker = msgs[answer.index - 1] if answer.index else None
    if asker is None or asker.role != "assistant" or asker.calls:
        return Fact("consent_given", False, (where,), f"the user's last message (message "
                    f"{answer.index}) answers no question of the assistant")  # fmt: skip
    region = facts.labels.phone_region
    options["order"] = facts.labels.label(call.name).args
    names = CallNames(call, **options, region=region)
    final = final_question(asker.text)
    if final is None:
        return Fact("consent_given", False, (where,), f"the assistant's message before the "
                    f"user's last message (message {asker.index}) does not end with a question "
                    "(a yes answers the question right above it)")  # fmt: skip
    read = [_Question(final, region)]
    unclear = next((q for q in read if not _plain_question(q.text)), None)
    if unclear is not None:
        return Fact("consent_given", False, (where,), f"the assistant's question in message "
                    f"{asker.index} ({_quote(unclear.text)}) is not a plain question about one "
                    "action (a negation, an alternative or a hidden character): a yes to it "
                    "approves nothing")  # fmt: skip
    asked = [q for q in read if names.named_by(q)]
    if not asked:
        return Fact("consent_given", False, (where,), f"the assistant's question before the "
                    f"user's last message (message {asker.index}) does not name "
                    f"{call.name!r}")  # fmt: skip
    question = asked[-1].text
    sources = (where, SourceRef(asker.index, asker.source, "model"))
    said = f"message {answer.index} ({_quote(answer.text)})"
    if not says_yes(answer.text):
        return Fact("consent_given", False, sources, f"the user's answer in {said} is not a "
                    "plain yes")  # fmt: skip
    earlier = {**options, "order": ANY_ORDER}  # a use in any order is a use
    used = next((c for c in facts.trace.calls if c.index > answer.index
                 and any(CallNames(c, **earlier, region=region).named_by(q) for q in asked)),
                None)  # fmt: skip
    identity = _identity(answer)
    if used is not None or facts.ledger.used(identity):
        by = f" by the call in message {used.index}" if used is not None else ""
        return Fact("consent_given", False, sources, f"the user's yes in {said} was already "
                    f"used{by}: it approves one call, once")  # fmt: skip
    facts.consumed[identity] = None
    return Fact("consent_given", True, sources, f"the user approved it in {said}, answering "
                f"the assistant's question in message {asker.index} ({_quote(question, 80)})")
