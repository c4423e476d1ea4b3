"""Orders to whoever reads a document, in forms that name no model.

:mod:`guardagent.trace.found.vocatives` hears text written to a model by a model word where a
letter names its addressee. An injection also speaks to its reader without one, in forms a
bill, a notice or a web page has no use for; a careful reader hears each as written to the
agent:

- a *claim of what the user wants*: "the user" or "your user" (or the agent's "owner",
  "principal", "operator") then a verb of wanting or asking ("The user has asked that
  payments go to ...", "Your owner wants ..."): a document cannot speak for the user, and
  a bill calls its reader "you" or "the customer";
- the *agent's task rewritten*: "your task", "your instructions", "your goal" (optionally
  "new", "real", "updated") followed by a verb or a colon ("Your task is now to ...",
  "Your new task: ..."), or "new task:" / "new instructions:" opening a sentence;
- an order about the reader's *own work on this text*: "before summarizing", "prior to
  replying", "after reading this", "upon reading this", "when you read this", "once you
  process this" (:data:`WORK`): a bill's reader pays it, it does not summarize it.

Read over the paragraph's word reading (:func:`~guardagent.trace.found.secret_forms.fold`, so
case, look-alikes and invisible characters do not hide the words), one pass, each form with
a bounded look-ahead. English only; what a bill does say to its reader ("Before paying,
check the amount", "Your instructions for returns are enclosed") is not read so. The forms
are evidence of an injection, never a setting: they only narrow what a document designates.
"""

from __future__ import annotations

import re

from guardagent.trace.found.secret_forms import fold
from guardagent.trace.text.budget import check_budget

_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?|[^\w\s]")  # a word (with "'s") or one other character
PRINCIPALS = frozenset({"user", "owner", "principal", "operator"})
"""Who an agent acts for, as an injection names them."""
WANTING = frozenset(
    {
        "wants",
        "want",
        "asked",
        "asks",
        "requested",
        "requests",
        "instructed",
        "instructs",
        "authorized",
        "authorised",
        "approved",
        "prefers",
        "insists",
        "wishes",
        "would",
        "demands",
        "needs",
        "expects",
        "ordered",
        "told",
        "directs",
        "directed",
    }
)
"""Verbs of what the principal wants ("has", "also", "now" may come between)."""
TASKS = frozenset(
    {
        "task",
        "tasks",
        "instructions",
        "instruction",
        "objective",
        "mission",
        "directive",
        "directives",
        "prompt",
        "assignment",
    }
)
"""Words for what an agent was told to do."""
_NEW = frozenset(
    {
        "new",
        "real",
        "actual",
        "true",
        "updated",
        "current",
        "revised",
        "only",
        "main",
        "next",
        "original",
        "first",
        "primary",
    }
)
_TASK_VERBS = frozenset(
    {"is", "are", "has", "have", "was", "were", "now", "changed", "updated", "includes", "include"}
)
_BETWEEN = frozenset(
    {"has", "have", "had", "also", "now", "just", "already", "explicitly", "specifically", "kindly"}
)
WORK = frozenset(
    {
        "summarizing",
        "summarising",
        "answering",
        "replying",
        "responding",
        "continuing",
        "proceeding",
        "completing",
        "finishing",
        "returning",
        "outputting",
        "generating",
        "reporting",
    }
)
"""The reader's own work: "before summarizing", "prior to replying"."""
_READING = frozenset({"reading", "processing", "parsing", "seeing", "ingesting", "scanning"})
_READ = frozenset(
    {
        "read",
        "process",
        "parse",
        "see",
        "summarize",
        "summarise",
        "answer",
        "reply",
        "respond",
        "ingest",
        "scan",
        "finish",
        "complete",
    }
)
_WHEN = frozenset({"before", "after", "upon", "once", "when", "while", "prior"})
_THIS = frozenset({"this", "these", "it"})


def _words(paragraph: str) -> tuple[list[str], list[bool]]:
    """The paragraph's words, and for each whether a sentence (or a colon) ends before it."""
    words: list[str] = []
    starts: list[bool] = []
    start = True
    for t in _TOKEN.findall(fold(paragraph)):
        check_budget()
        if t[0].isalnum():
            words.append(t)
            starts.append(start)
            start = False
        elif t in ".!?:;\n":
            start = True
    return words, starts


def order_cue(paragraph: str) -> str | None:
    """The form that gives the reading agent an order (module doc), or None."""
    words, starts = _words(paragraph)
    colon = ":" in paragraph
    for i in range(len(words)):
        check_budget()
        cue = _claim(words, i) or _task(words, starts, i, colon) or _work(words, starts, i)
        if cue is not None:
            return cue
    return None


def _claim(words: list[str], i: int) -> str | None:
    """A claim of the principal's wish: "The user has asked ...", "Your owner wants ..."."""
    if words[i] not in PRINCIPALS or not i or words[i - 1] not in ("the", "your"):
        return None
    j = i + 1
    while j < len(words) and j - i < 4 and words[j] in _BETWEEN:
        j += 1
    return (
        f"{words[i - 1]} {words[i]} {words[j]}"
        if j < len(words) and (words[j] in WANTING)
        else None
    )


def _task(words: list[str], starts: list[bool], i: int, colon: bool) -> str | None:
    """The agent's task rewritten: "Your task is now ...", "Your new task:", "New task:"."""
    w, n = words[i], len(words)
    if w not in TASKS:
        return None
    ends = colon and i + 1 < n and starts[i + 1]  # a colon (or a sentence's end) after it
    yours = (
        i and words[i - 1] == "your" or i > 1 and words[i - 1] in _NEW and (words[i - 2] == "your")
    )
    if yours and (ends or i + 1 < n and words[i + 1] in _TASK_VERBS):
        return f"your ... {w}"
    if i and words[i - 1] == "new" and starts[i - 1] and not starts[i] and ends:
        return f"new {w}:"
    return None


def _work(words: list[str], starts: list[bool], i: int) -> str | None:
    """The reader's own work: "Before summarizing", "After reading this", "When you read"."""
    w = words[i]
    if w not in _WHEN or not starts[i]:
        return None
    after = words[i + 1 : i + 4]
    if w == "prior" and after[:1] == ["to"]:
        after = after[1:]
    if after[:1] and (
        after[0] in WORK or after[0] in _READING and after[1:2] and after[1] in _THIS
    ):
        return f"{w} {after[0]}"
    if after[:1] == ["you"] and after[1:2] and after[1] in _READ:
        return f"{w} you {after[1]}"
    return None
