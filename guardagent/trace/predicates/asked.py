"""What the assistant asked the user earlier, compared loosely with the deployer's words.

"Ask the user before clicking Delete" is kept when the agent asked something like "Do you
want me to delete this product?" first; the agent words it its own way ("... the product
'Blue mug'?"), so the deployer's template is compared fuzzily, as ``arg_similar`` compares
the proposed call's own arguments. ``asked_before`` is that history predicate:

- **who asks**: the assistant, and only where the user reads it: a reply (an assistant
  message that makes no call) or, with ``via`` (a tool glob the deployer names:
  ``"send_msg_to_user"``), the text of an earlier call of that tool whose result says it
  was delivered (present, not an error) and that holds one text argument
  (:func:`~.told.sent_text`: with two, which did the user read?). Text in a tool result, a
  page, the system prompt or a user message ("the assistant asked ... and I said yes")
  never counts, nor the
  model's reasoning beside an action (the text of an assistant message that makes a call),
  nor a message sent in the same turn as this call (the user could not have read it);
- **what is asked**: each question of that text (a sentence ending in ``?``,
  :func:`~.conversation.questions`), normalised, is compared with each template by a
  :mod:`rapidfuzz.fuzz` scorer at ``threshold``; a statement ("I will delete it.") asks
  nothing. Characters compared loosely miss a changed word ("rename" or "keep" for
  "delete" still scores about 90), so ``words`` lists words (or phrases) each question must
  hold whole, as :func:`~.answer.tokens` reads them: ``words=["delete"]``;
- **when**: ``within=n``: fewer than `n` calls came between the question and this call
  (``within=1``: right before it, the message tool's own call aside);
- **answered**: ``yes=True``: the question is plain (no negation, alternative, condition or
  hidden character: :func:`~.plain_question.plain_question`) and the user's next message,
  with nothing but the message tool's results between, is a plain yes (courtesy and the
  question's own words only, :func:`_no_yes`: "Yes, delete it." is one; "Yes, tomorrow.",
  "Yes, delete the other one." and "No" are none) and the user's last message (anything
  said since may take it back). A yes approves each later call the rule guards; pair it
  with ``within`` or ``at_most`` for one.

Bounded: a template is at most :data:`MAX_TEMPLATE_CHARS` and a question over
:data:`MAX_QUESTION_CHARS` is not compared (a found match elsewhere still holds; else the
predicate is open: it cannot tell), so the work is linear in the assistant's text. In a
trace a conversation summary cut, a question not found is open too (it may be in what the
summary replaced).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from guardagent.trace.predicates.answer import (
    AFFIRMATIVE,
    REFERENCES,
    not_a_plain_yes,
    tokens,
)
from guardagent.trace.predicates.arguments import SCORERS
from guardagent.trace.predicates.conversation import questions
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.hidden import summary_hides
from guardagent.trace.predicates.plain_question import plain_question
from guardagent.trace.predicates.told import user_view
from guardagent.trace.text.normal import normalize_text

MAX_TEMPLATE_CHARS = 500
"""The longest template a policy may give (a question, not a page): bounds each comparison."""
MAX_QUESTION_CHARS = 2_000
"""The longest question compared; a longer one is not read (the predicate cannot tell)."""
_MARKUP = " \t\r\n*_`\"'"
"""Markup and quotes around a question ("**Delete it?**"): not part of what it asks."""


@dataclass(frozen=True)
class Asked:
    """One question the assistant put to the user.

    Attributes:
        text: The question as written.
        index: The message that holds it (the reply, or the message tool's call).
        after: Calls made between it and the proposed call.
    """

    text: str
    index: int
    after: int


def _window(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """How many visible calls make a summary irrelevant: `within`, or never (no window)."""
    within = kwargs["within"] if "within" in kwargs else (args[4] if len(args) > 4 else None)
    return int(within) if within is not None else 1 << 62


def asked(facts: TraceFacts, via: str | None) -> Iterator[Asked]:
    """Every question the assistant put to the user before this call, oldest first. Linear.

    The turns are read as the user read them (:func:`~.told.user_view`): with `via`, a turn's
    text is what its delivered message-tool calls showed (one text argument each); without,
    only a reply that makes no call is read (the text beside an action is reasoning).
    """
    trace = facts.trace
    view = trace.messages if via is None else user_view(trace, via)
    positions = [c.index for c in trace.calls]
    seen = 0
    for message in view:
        if message.index >= trace.call.index:
            break  # the proposed call's own turn: the user has not read it yet
        if message.role != "assistant" or (via is None and message.calls):
            continue
        while seen < len(positions) and positions[seen] <= message.index:
            seen += 1
        after = len(positions) - seen  # calls after this message, before the proposed one
        for question in questions(message.text):
            yield Asked(question, message.index, after)


def _answered(facts: TraceFacts, question: Asked, via: str | None) -> str | None:
    """Why the user's next message is no plain yes to `question` (None: it is one).

    Only the results of the asking turn's own message-tool calls may stand between: a turn
    that also acted (a click beside the question) did something the yes came after. The yes
    is the user's last message: anything the user said since may take it back.
    """
    if not plain_question(question.text, []):
        return (
            "the question is not plain (a negation, an alternative, a condition or a "
            "hidden character)"
        )
    asking = facts.trace.messages[question.index]
    if via is not None and any(not fnmatch.fnmatchcase(c.name, via) for c in asking.calls):
        return "the turn that asked it also acted"
    for message in facts.trace.messages[question.index + 1 :]:
        if message.role == "tool":
            continue  # the message tool's own result ("sent")
        if message.role != "user":
            return "the assistant said more before the user answered"
        why = _no_yes(message.text, question.text)
        if why is not None:
            return f"the user's answer in message {message.index} is no plain yes ({why})"
        last = next(m for m in reversed(facts.trace.messages) if m.role == "user")
        return (
            None
            if last is message
            else f"the user wrote again after the yes (message "
            f"{last.index}): a yes counts as the user's last word only"
        )
    return "the user has not answered it"


def _no_yes(answer: str, question: str) -> str | None:
    """Why `answer` is no plain yes to `question` (None: it is one).

    A plain yes holds courtesy only (:func:`~.answer.not_a_plain_yes`), or also restates the
    question in its own words ("Yes, delete it." to "Shall I delete it?"): the answer is read
    a second time without the question's words, and passes only if the first reading's one
    objection was an added word. A question mark, a negation or an odd symbol stays one.
    """
    why = not_a_plain_yes(answer)
    if why is None or not why.startswith("it adds"):
        return why
    asked = (set(tokens(question)) | REFERENCES) - {p[0] for p in AFFIRMATIVE if len(p) == 1}
    rest = " ".join(w for w in tokens(answer) if w not in asked)
    return None if not_a_plain_yes(rest) is None else why


@predicate
@summary_hides(True, _window)
def asked_before(
    facts: TraceFacts,
    text: str | list[str] | tuple[str, ...],
    threshold: float = 90,
    scorer: str = "ratio",
    via: str | None = None,
    within: int | None = None,
    yes: bool = False,
    words: str | list[str] | tuple[str, ...] = (),
) -> Fact:
    """The assistant asked the user a question at least `threshold` similar to `text` earlier.

    `text` is one template or a list (any counts); `via` a tool glob whose delivered calls'
    string arguments are messages to the user (else only replies count); `within` the most
    calls between the question and this one; `yes` also needs the user's plain yes right
    after it; `words` are words each matching question holds whole. Tool results, pages
    and user text never count (see the module).
    """
    templates = [_plain(t) for t in ([text] if isinstance(text, str) else text)]
    needed = [tuple(tokens(w)) for w in ([words] if isinstance(words, str) else words)]
    score = SCORERS[scorer]
    unread: Asked | None = None
    found: Asked | None = None
    refused = ""
    for question in asked(facts, via):
        if within is not None and question.after >= within:
            continue
        if len(question.text) > MAX_QUESTION_CHARS:
            unread = unread or question
            continue
        said = _plain(question.text)
        if not any(score(said, t, processor=None) >= threshold for t in templates):
            continue
        if needed and not _holds(tokens(said), needed):
            continue
        why = _answered(facts, question, via) if yes else None
        if why is None:
            found = question
        else:
            refused = f"; message {question.index} asks it, but {why}"
    where = (
        f"{scorer} >= {threshold} with {_shown(templates)}"
        + (f", holding {', '.join(' '.join(w) for w in needed)}" if needed else "")
        + (f", within {within} call(s)" if within is not None else "")
    )
    if found is not None:
        answered = " and the user said yes" if yes else ""
        return Fact(
            "asked_before",
            True,
            facts.search.refs([found.index]),
            f"the assistant asked {_quoted(found.text)} in message {found.index}"
            f"{answered} ({where})",
        )
    if unread is not None:
        return Fact(
            "asked_before",
            None,
            facts.search.refs([unread.index]),
            f"no question of the assistant matches ({where}){refused}; the question "
            f"in message {unread.index} is too long to compare (over "
            f"{MAX_QUESTION_CHARS} characters)",
        )
    return Fact(
        "asked_before",
        False,
        (),
        f"no question the assistant put to the user matches ({where}){refused}",
    )


def _plain(text: str) -> str:
    """Text as compared: normalised (:func:`normalize_text`), markup around it dropped."""
    return normalize_text(text).strip(_MARKUP)


def _holds(said: list[str], needed: list[tuple[str, ...]]) -> bool:
    """Every needed word run occurs whole in `said` (linear: runs are a policy's few words)."""
    return all(
        any(tuple(said[i : i + len(run)]) == run for i in range(len(said))) for run in needed
    )


def _quoted(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _shown(templates: list[str]) -> str:
    return " or ".join(_quoted(t, 60) for t in templates[:3]) + (
        f" (+{len(templates) - 3})" if len(templates) > 3 else ""
    )


@checks("asked_before")
def _check_asked(given: dict[str, Any]) -> None:
    text = given["text"]
    items = (
        [text] if isinstance(text, str) else list(text) if isinstance(text, list | tuple) else None
    )
    if not items or not all(isinstance(t, str) and normalize_text(t).strip() for t in items):
        raise PredicateSpecError("text must be a non-empty string or a list of them")
    if any(len(t) > MAX_TEMPLATE_CHARS for t in items):
        raise PredicateSpecError(f"a template is at most {MAX_TEMPLATE_CHARS} characters")
    threshold = given["threshold"]
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not (0 < threshold <= 100)
    ):
        raise PredicateSpecError(f"threshold must be a number in (0, 100], not {threshold!r}")
    if given["scorer"] not in SCORERS:
        raise PredicateSpecError(f"scorer must be one of {', '.join(SCORERS)}")
    via = given["via"]
    if via is not None and (not isinstance(via, str) or not via.strip()):
        raise PredicateSpecError("via must be a tool name or glob (the message tool)")
    within = given["within"]
    if within is not None and (
        isinstance(within, bool) or not isinstance(within, int) or within < 1
    ):
        raise PredicateSpecError(f"within must be a whole number >= 1, not {within!r}")
    if not isinstance(given["yes"], bool):
        raise PredicateSpecError("yes must be True or False")
    words = given["words"]
    runs = (
        [words]
        if isinstance(words, str)
        else list(words)
        if isinstance(words, list | tuple)
        else None
    )
    if runs is None or not all(isinstance(w, str) and 0 < len(tokens(w)) <= 8 for w in runs):
        raise PredicateSpecError(
            "words must be a word (or a phrase of up to 8 words) or a list of them"
        )
