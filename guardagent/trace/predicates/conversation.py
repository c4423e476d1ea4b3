"""Consent asked in the conversation: the user's "yes" to the assistant's question (opt-in).

Many agents ask before acting ("May I delete the project `planner`?") and the user answers
in the chat. With ``consent_given(conversation=True)`` that answer approves the call, under
every one of these conditions (else it does not, and the fact says which one failed):

- the **answer** is the thread's last user message, and it is a ``user`` message: text in a
  tool result or in the model's own messages never counts;
- it comes right after an **assistant message that ends with a question** (its last
  sentence ends in ``?``; markup or quotes may close around it) and makes no call: a user
  message that answers no question never counts, nor a question buried earlier in the
  message or followed by more text than an emoji or "Let me know." (:func:`final_question`),
  nor one shown beside a part the guard cannot read (an image, a file:
  ``Message.unread_parts``); courtesy lead-ins ("go ahead and delete") are dropped before
  the question is read (:mod:`.lead_ins`);
- the question **asks leave for this act**: a frame such as "may I", "shall we", "do you
  want me to" (or none), then the tool's verb, nothing reported, hedged or put to another
  after it, and no other question in the message (:mod:`.leave`): "May Bob delete
  planner?", "Did you delete planner?", "May I ask Bob to delete planner?" and "The email
  asks: may I delete planner?" approve nothing;
- the question **names this call**: its tool (``delete_project`` as "delete the project",
  or its verb "delete" as a word of its own when no other labelled tool that starts with
  it takes the call's arguments: :func:`~.tool_words.verb_is_unique`; a
  misspelt tool word passes at ``similarity`` 50-100 with ``rapidfuzz``, default 85, but
  never a word that holds it: "undelete") *and*
  every one of its argument values, exactly (``match="both"``, the default: "May I delete
  planner?" approves neither deleting ``notes`` nor ``planner2``, and "May I send CHF 50 to
  <IBAN>?" not CHF 5,000 to it). Typed values are compared by their key (an IBAN
  re-spaced, an amount regrouped, "4,950.00" for 4950, an address case-folded), other
  values as the same run of whole words (case kept, as the tool compares them: ``Planner``
  is not ``planner``; punctuation kept but for quotes and brackets around a word and a
  clause mark after it: ``../planner`` and ``planner*`` are not ``planner``); a value
  with an invisible character is never named, nor one written only to qualify another
  thing ("the copy of planner", "the reminder about planner": :mod:`.qualified`). A flag
  (a boolean or null argument: ``force=True``) is named by its argument's name, and its
  value when not true (:class:`_Flag`). A call with no value at all is named by its
  tool; prose longer than :data:`~.naming.MAX_TARGET_CHARS` (a message body; never a path
  or URL: :func:`~.naming._content`) is content, not a target, so a call whose every
  value is content is named by no question.
  Values of one kind in two or more arguments must be named in the order of the label's
  ``args`` (:func:`_in_order`: roles cannot swap). ``match="either"`` takes the tool *or*
  all values (looser: for tools whose calls the user
  tells apart by either). With ``arg``, every value of that argument must be named (and the
  other arguments need not be);
- the question asks **one thing**: no list argument of the call repeats a value
  (:func:`_repeated`: ``iban=[A, A]`` may pay twice), no more typed values of a kind the
  call takes than the call has, and no joining word beyond the call's own values unless
  the call takes a list ("May I send CHF 50 to A and CHF 5,000 to B?" approves neither
  payment), nor, for a call with values in two or more arguments, a clause separator (a
  comma, a line break: "move planner to archive, notes to trash" approves no move); an
  amount read two ways names the English reading only ("4,950" is 4950; "1.500", 1.5 or
  1500, names none: :func:`~.naming._one_request`, :func:`~.naming._plain_keys`);
- the question is **plain**: it holds no negation, no alternative
  or the opposite, no value excluded and no deferral or condition (:data:`QUESTION_STOPS`:
  "not", "or", "rather", "instead", "keep", "already", "excluding", "other", "if", "after",
  "tomorrow", any "...n't"), no invisible or direction character and no markup a chat may
  show without its text (an HTML tag or comment, a Markdown link): a question shown
  otherwise than it reads; "Should I not delete planner?", "Delete planner or notes?" and
  "May I delete planner? Or keep it?" approve nothing; nor does one after a deferral in the
  same message (:data:`DEFERRALS`: "I'll wait until Bob signs off. May I delete planner?");
- the answer **says yes, now**: an affirmative (:data:`AFFIRMATIVE`) and else only courtesy
  or an exact restatement of this call (:mod:`.answer`, a whitelist): "Yes, tomorrow.",
  "OK, once Bob signs off.", "Yes, delete notes.", "No" and "Yes?" never count;
- it approves **one call, once**: an earlier call after the answer that the question also
  names used it, and so does any call the thread's ledger recorded
  (:mod:`~guardagent.trace.predicates.ledger`).

The fact names the answer and the question (``sources``: the user's message, then the
model's); a refusal after the answer names the question to ask instead (:func:`_ask`).
The lexicons are English and hand-written; an answer in another language is not read as a
yes (fail closed).
"""

from __future__ import annotations

from typing import Any

from guardagent.trace.document.shapes import Message, ToolCall
from guardagent.trace.found.written import MAX_TARGET_CHARS
from guardagent.trace.predicates.answer import (
    AFFIRMATIVE,
    NEGATIVE,
    not_a_plain_yes,
    says_yes,
)
from guardagent.trace.predicates.engine import TraceFacts
from guardagent.trace.predicates.fact import Fact
from guardagent.trace.predicates.lead_ins import closing_only, without_lead_ins
from guardagent.trace.predicates.leave import why_not_leave
from guardagent.trace.predicates.naming import (
    ANY_ORDER,
    CallNames,
    Question,
    names_call,
)
from guardagent.trace.predicates.options import top_arg
from guardagent.trace.predicates.plain_question import (
    DEFERRALS,
    QUESTION_STOPS,
    deferred,
    plain_question,
)
from guardagent.trace.predicates.told import asker as asked_by
from guardagent.trace.predicates.told import user_view
from guardagent.trace.predicates.tool_words import verb_is_unique
from guardagent.trace.sources.provenance import SourceRef
from guardagent.trace.thread.state import flatten

__all__ = [
    "AFFIRMATIVE",
    "DEFERRALS",
    "MATCHES",
    "MAX_TARGET_CHARS",
    "NEGATIVE",
    "QUESTION_STOPS",
    "asked_in_conversation",
    "final_question",
    "names_call",
    "questions",
    "says_yes",
]

MATCHES = ("both", "either")
"""How a question must name the call: its tool and a value (``both``), or ``either``."""

_CLOSING = " \t\r\n*_`\"')]}»”’"
"""What may follow the final question (markup and quotes closing around it)."""


_SENTENCE_ENDS = frozenset("?\n。！？")
_QUESTION_ENDS = frozenset("?？")
_SPACED_ENDS = frozenset(".!")


def questions(text: str) -> list[str]:
    """The sentences of a text that end with a question mark (a linear scan).

    A period or an exclamation mark ends a sentence only before a space or the end, so
    addresses, URLs and a code host's merge request ("!87") stay whole.
    """
    found: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        ends = ch in _SENTENCE_ENDS or (
            ch in _SPACED_ENDS and (i + 1 == len(text) or text[i + 1].isspace())
        )
        if ends:
            if ch in _QUESTION_ENDS and text[start:i].strip():
                found.append(text[start : i + 1].strip())
            start = i + 1
    return found


def final_question(text: str) -> str | None:
    """The question a message ends with (its last sentence, when it ends in "?"), or None.

    A user's yes answers the question right above it: one buried earlier in the message, or
    followed by more text (a summary the user answered instead), is not what they said yes to;
    an emoji or an exact closer ("Let me know.", :func:`~.lead_ins.closing_only`) is no text.
    """
    asked = questions(text)
    if not asked:
        return None
    if text.rstrip(_CLOSING).endswith(asked[-1].rstrip(_CLOSING)):
        return asked[-1]
    end = text.rfind(asked[-1]) + len(asked[-1])  # only an emoji or "Let me know." after it
    return asked[-1] if closing_only(text[end:].lstrip(_CLOSING)) else None


def _ask(call: ToolCall, names: CallNames) -> str:
    """What to ask the user instead: this action on this object, now (for the detail).

    The tool's words, then each value in the label's ``args`` order (roles cannot swap), a
    flag as ``name=value``: a question a plain yes to which approves this call.
    """
    order = names.order or ()
    ranked = sorted(
        flatten(call.args),
        key=lambda pv: order.index(top_arg(pv[0])) if top_arg(pv[0]) in order else len(order),
    )
    what = " ".join(_written(path, value) for path, value in ranked)
    return (
        f'ask the user "May I {names.tool}{" " + what if what else ""} now?" and wait '
        'for a plain yes ("Yes", "Go ahead")'
    )


def _quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def _identity(answer: Message) -> str:
    return f"c:{answer.index}:{answer.digest.hex()[:32]}"


def _written(path: str, value: Any) -> str:
    """One argument as the suggested question writes it: a flag by its name."""
    if value is None or isinstance(value, bool):
        name = path.rsplit(".", 1)[-1].split("[", 1)[0]
        return f"{name}={'null' if value is None else str(value).lower()}"
    text = " ".join(str(value).split())
    return f"`{text if len(text) <= 60 else text[:57] + '...'}`"


def _repeated(value: Any, path: str = "") -> str | None:
    """The path of the first list in `value` holding one value twice, or None.

    A yes to "May I send CHF 50 to <IBAN>?" approves one transfer; ``iban=[A, A]`` may make
    two. Elements are compared as a key reader would at least (spaces dropped, case
    folded), so a re-spaced or re-cased copy is a copy too (fail closed). Linear.
    """
    if isinstance(value, dict):
        return next(
            (
                r
                for k, v in value.items()
                if (r := _repeated(v, f"{path}.{k}" if path else str(k))) is not None
            ),
            None,
        )
    if isinstance(value, list | tuple):
        keys = ["".join(str(v).split()).casefold() for v in value]
        if len(set(keys)) < len(keys):
            return path
        return next(
            (r for i, v in enumerate(value) if (r := _repeated(v, f"{path}[{i}]")) is not None),
            None,
        )
    return None


def asked_in_conversation(
    facts: TraceFacts,
    *,
    arg: str | None = None,
    similarity: float = 85,
    match: str = "both",
    via: str | None = None,
) -> Fact:
    """The user's last message says yes to the assistant's question naming this call.

    With `via` (the glob of the tool the agent speaks to the user with), the conversation is
    read as the user read it (:mod:`.told`): a delivered message is the assistant's reply.
    Every refusal after the user's answer says what to ask instead (:func:`_ask`): the
    guard never guesses a yes, it has the agent ask again.
    """
    call = facts.trace.call
    msgs = facts.trace.messages if via is None else user_view(facts.trace, via)
    options: dict[str, Any] = {"arg": arg, "similarity": similarity, "match": match}
    answer = next((m for m in reversed(msgs) if m.role == "user"), None)
    if answer is None:
        return Fact("consent_given", False, (), "no user message answers a question about it")
    where = SourceRef(answer.index, answer.source, "user")
    region = facts.labels.phone_region
    options["order"] = facts.labels.label(call.name).args
    options["verb_alone"] = verb_is_unique(facts.labels, call.name, frozenset(call.args))
    names = CallNames(call, **options, region=region)
    ask = _ask(call, names)
    repeated = _repeated(call.args)
    if repeated is not None:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the call's argument {repeated!r} is a "
            "list that repeats a value: a yes to a question naming it once approves "
            f"one action, not one per copy; {ask}",
        )
    asker = asked_by(facts.trace, msgs, answer, via)
    if asker is None or asker.role != "assistant" or asker.calls:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the user's last message (message "
            f"{answer.index}) answers no question of the assistant: {ask}",
        )
    if asker.unread_parts:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the assistant's message before the "
            f"user's last message (message {asker.index}) shows the user "
            f"{asker.unread_parts} part(s) besides its text (an image, a file) the "
            f"guard cannot read: a yes to it approves nothing; {ask} in text alone",
        )
    final = final_question(asker.text)
    if final is None:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the assistant's message before the "
            f"user's last message (message {asker.index}) does not end with a question "
            f"(a yes answers the question right above it): {ask}",
        )
    verb = names.tool.split()[0] if names.tool else ""
    read = [Question(without_lead_ins(final, verb), region)]  # "go ahead and delete" asks leave
    unclear = next((q for q in read if not plain_question(q.text, names.phrases)), None)
    if unclear is not None:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the assistant's question in message "
            f"{asker.index} ({_quote(unclear.text)}) is not a plain question about one "
            "action (a negation, an alternative, an exclusion, a deferral, a "
            f"condition or a hidden character): a yes to it approves nothing; {ask}",
        )
    deferral = deferred(msgs, asker, final, names.phrases)
    if deferral is not None:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the assistant defers or conditions "
            f"the action before its question in message {asker.index} ({deferral!r}): "
            f"a yes to it is no yes to doing it now; {ask}",
        )
    asked = [q for q in read if names.named_by(q)]
    if not asked:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the assistant's question before the "
            f"user's last message (message {asker.index}) does not name "
            f"{call.name!r} with exactly its values, as the thing asked about (not "
            f"another thing that mentions them, not in another case): {ask}",
        )
    question = asked[-1].text
    leave = why_not_leave(
        question, names.tool, similarity, match == "either", names.flag_words, names.phrases
    )
    if leave is not None:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the assistant's question in message "
            f"{asker.index} ({_quote(question)}) asks no leave for this call: {leave}; "
            f"a yes to it approves nothing; {ask}",
        )
    before = questions(asker.text)[:-1]
    if before:
        return Fact(
            "consent_given",
            False,
            (where,),
            f"the assistant's message {asker.index} "
            f"asks {len(before) + 1} questions ({_quote(before[-1])} before its last): "
            f"a yes does not say which it answers; {ask} alone",
        )
    sources = (where, SourceRef(asker.index, asker.source, "model"))
    said = f"message {answer.index} ({_quote(answer.text)})"
    why = not_a_plain_yes(answer.text, names)
    if why is not None:
        return Fact(
            "consent_given",
            False,
            sources,
            f"the user's answer in {said} is not a plain yes ({why}): {ask}",
        )
    earlier = {**options, "order": ANY_ORDER, "verb_alone": True, "single": False}  # any naming
    used = next(
        (
            c
            for c in facts.trace.calls
            if c.index > answer.index
            and any(CallNames(c, **earlier, region=region).named_by(q) for q in asked)
        ),
        None,
    )
    identity = _identity(answer)
    if used is not None or facts.ledger.used(identity):
        by = f" by the call in message {used.index}" if used is not None else ""
        return Fact(
            "consent_given",
            False,
            sources,
            f"the user's yes in {said} was already used{by}: it approves one call, once; {ask}",
        )
    facts.consumed[identity] = None
    return Fact(
        "consent_given",
        True,
        sources,
        f"the user approved it in {said}, answering "
        f"the assistant's question in message {asker.index} ({_quote(question, 80)})",
    )
