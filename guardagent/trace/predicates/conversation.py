"""Consent asked in the conversation: the user's "yes" to the assistant's question (opt-in).

Many agents ask before acting ("May I delete the project `planner`?") and the user answers
in the chat. With ``consent_given(conversation=True)`` that answer approves the call, under
every one of these conditions (else it does not, and the fact says which one failed):

- the **answer** is the thread's last user message, and it is a ``user`` message: text in a
  tool result or in the model's own messages never counts;
- it comes right after an **assistant message that asks a question** (a sentence ending in
  ``?``, one of its last :data:`MAX_QUESTIONS`) and makes no call: a user message that
  answers no question never counts;
- the question **names this call** (fuzzy, with ``rapidfuzz``, ``similarity`` 50-100,
  default 85): its tool (``delete_project`` as "delete the project", or its verb "delete")
  *and* one of its argument values (``planner``), by default (``match="both"``: "May I
  delete planner?" does not approve deleting ``notes``, nor "May I read planner?" deleting
  planner); a call with no value to name is named by its tool. ``match="either"`` takes the
  tool *or* a value (looser: for tools whose calls the user tells apart by either). With
  ``arg``, every value of that argument must be named. Values longer than
  :data:`MAX_TARGET_CHARS` (a message body) are not targets; short values and numbers must
  appear as whole words (``4950`` in "CHF 4,950");
- the answer **says yes**: it starts with an affirmative (:data:`AFFIRMATIVE`: "yes", "ok",
  "go ahead", ...) and holds no negation or reservation (:data:`NEGATIVE`: "no", "don't",
  "not", "wait", "but", "instead", any "...n't"): "No", "Yes, but not now" and "Don't" never
  count;
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

MATCHES = ("both", "either")
"""How a question must name the call: its tool and a value (``both``), or ``either``."""

MAX_QUESTIONS = 3
"""Only the last questions of the assistant's message are read: the one the user answers."""

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
    return any(tuple(words[:len(p)]) == p for p in AFFIRMATIVE)


def _targets(call: ToolCall, arg: str | None) -> list[str]:
    values: list[str] = []
    for path, value in flatten(call.args):
        if arg is not None and not under(path, arg):
            continue
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        text = _clean(str(value))
        if text and len(text) <= MAX_TARGET_CHARS:
            values.append(text)
    return values


def _named(target: str, question: str, similarity: float) -> bool:
    if len(target) < 5 or target.replace(" ", "").isdigit():
        return f" {target} " in f" {question} "  # whole words only
    return fuzz.partial_ratio(target, question) >= similarity


def _tool_named(tool: str, question: str, similarity: float) -> bool:
    """The tool's words ("delete project"), or its verb as a word of its own ("delete")."""
    if not tool:
        return False
    if fuzz.token_set_ratio(tool, question) >= similarity:
        return True
    verb = tool.split()[0]
    return len(verb) >= 3 and any(fuzz.ratio(verb, w) >= similarity for w in question.split())


class CallNames:
    """What a question must name to name a call, read once per call (see the module)."""

    def __init__(self, call: ToolCall, *, arg: str | None = None, similarity: float = 85,
                 match: str = "both") -> None:  # fmt: skip
        self.tool = _words(call.name)
        self.targets = _targets(call, arg)
        self.arg, self.similarity, self.match = arg, similarity, match

    def named_by(self, question: str) -> bool:
        """Whether a question names the call: its tool and a value, or either."""
        q, sim = _clean(question), self.similarity
        tool_named = _tool_named(self.tool, q, sim)
        if self.arg is not None:  # the argument's every value
            target_named = bool(self.targets) and all(_named(t, q, sim) for t in self.targets)
        elif self.match == "both" and not self.targets:
            target_named = True  # a call with no value to name: its tool names it
        else:
            target_named = any(_named(t, q, sim) for t in self.targets)
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
    names = CallNames(call, **options)
    asked = [q for q in questions(asker.text)[-MAX_QUESTIONS:] if names.named_by(q)]
    if not asked:
        return Fact("consent_given", False, (where,), f"the assistant's question before the "
                    f"user's last message (message {asker.index}) does not name "
                    f"{call.name!r}")  # fmt: skip
    question = asked[-1]
    sources = (where, SourceRef(asker.index, asker.source, "model"))
    said = f"message {answer.index} ({_quote(answer.text)})"
    if not says_yes(answer.text):
        return Fact("consent_given", False, sources, f"the user's answer in {said} is not a "
                    "plain yes")  # fmt: skip
    used = next((c for c in facts.trace.calls if c.index > answer.index
                 and any(CallNames(c, **options).named_by(q) for q in asked)), None)  # fmt: skip
    identity = _identity(answer)
    if used is not None or facts.ledger.used(identity):
        by = f" by the call in message {used.index}" if used is not None else ""
        return Fact("consent_given", False, sources, f"the user's yes in {said} was already "
                    f"used{by}: it approves one call, once")  # fmt: skip
    facts.consumed[identity] = None
    return Fact("consent_given", True, sources, f"the user approved it in {said}, answering "
                f"the assistant's question in message {asker.index} ({_quote(question, 80)})")
