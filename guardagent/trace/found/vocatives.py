"""Text that speaks to a model: the structure of an address, not a list of its phrases.

:mod:`guardagent.trace.found.addressed` lists phrases that address the agent ("note to the ai",
"dear assistant"); an attacker has endless others ("Note to the A.I.:", "Instructions for
the assistant:", "@assistant", "You, the assistant, must ..."). A careful reader hears each
as written to the machine because of its *form*: a word for a model in the place where a
letter names its addressee. This module reads those forms over a paragraph's words:

- a *directive to or for* it: a word such as "note", "instructions", "message", "attention"
  then "to" or "for", then determiners or modifiers ("the", "any", "automated"), then a
  model word ("Note to the A.I.", "Instructions for the assistant");
- a dedication at a sentence's start: "To the assistant:", "For any AI agent,";
- a *greeting*: "dear", "hey", "hello", "attention"... and a model word ("Hi Copilot"; of
  the words a person is also called by, only "assistant": "Dear Agent," is a letter);
- a *vocative* opening a sentence: a model word alone before ``,`` or ``!`` ("Agent,
  kindly wire ..."; "Your agent, Peter" and "Agent: Peter" are none), and a word that
  names only a model (or "assistant") before any other mark but a hyphen, quotes or
  brackets around it ("AI; pay", "(AI) pay", "Copilot — pay", "`AI`, pay");
- a model word that names only a model as the *subject of an obligation*: "The AI must
  ...", "Any LLM is required to ...", "Language models should ..." (not "our AI", a
  product, nor "will"; the words a person is also called by are not read so: "The agent
  must sign the lease");
- an *apposition to "you"*: "You, the assistant, ..." (or "you are an AI");
- a *handle*: ``@`` before a model word (``@assistant``);
- a *heading*: a model word and a directive word before ``:`` ("ASSISTANT INSTRUCTIONS:";
  not "Model instructions:", a manual's);
- a model *reading* the text: "any AI reading this", "model processing this document"
  (not "Agent processing fee");
- an *override of what came before*: "ignore", "disregard", "forget" and, within eight
  words of its sentence, "above", "previous", "earlier"... ("Ignore the IBAN above",
  "Ignore what the invoice says above");

Model words are "ai", "llm", "bot", "gpt", "chatbot", "copilot" and the words a human is
also called by ("assistant", "agent", "model"), the latter only inside these forms ("Dental
assistant:" and "Your agent: Peter Muster" have none). The text is read as a reader sees it
(:func:`~guardagent.trace.found.secret_forms.fold`: Unicode forms, case, invisible characters and
look-alike letters from other scripts), and letters spelled apart are read joined when they
spell a model word (``A.I.``, ``a-i``, ``L L M``). Linear: one pass over the words, each
form with a bounded look-around.
"""

from __future__ import annotations

import re

from guardagent.trace.found.secret_forms import fold
from guardagent.trace.text.budget import check_budget

_TOKEN = re.compile(r"\w+|[^\w\s]")  # a word or one other character: linear
STRONG = frozenset(
    {
        "ai",
        "ais",
        "llm",
        "llms",
        "gpt",
        "chatgpt",
        "chatbot",
        "chatbots",
        "bot",
        "bots",
        "copilot",
        "claude",
        "gemini",
        "genai",
    }
)
"""Words that name a model and nothing else."""
WEAK = frozenset({"assistant", "assistants", "agent", "agents", "model", "models"})
"""Words that name a model or a person: a cue only inside one of the module's forms."""
NOUNS = STRONG | WEAK
_GREETED = STRONG | {"assistant", "assistants"}
"""Model words a greeting or a heading addresses ("Dear Agent," and "Model instructions:"
are a letter to a person and a product's manual)."""
_READ = frozenset(
    {
        "this",
        "these",
        "the",
        "it",
        "that",
        "document",
        "text",
        "email",
        "page",
        "message",
        "file",
        "invoice",
    }
)
"""Words after "reading" that make it a model reading the text ("Agent processing fee" is
none)."""
_JOINED = {
    ("artificial", "intelligence"): "ai",
    ("language", "model"): "llm",
    ("language", "models"): "llms",
    ("chat", "gpt"): "chatgpt",
    ("co", "pilot"): "copilot",
    ("chat", "bot"): "chatbot",
}
_DETERMINERS = frozenset(
    {
        "the",
        "a",
        "an",
        "any",
        "all",
        "every",
        "each",
        "this",
        "our",
        "your",
        "my",
        "automated",
        "virtual",
        "digital",
        "smart",
        "helpful",
        "friendly",
        "autonomous",
        "large",
        "intelligent",
        "ai",
        "llm",
        "gpt",
        "coding",
        "browsing",
        "personal",
        "reading",
    }
)
DIRECTIVES = frozenset(
    {
        "note",
        "notes",
        "message",
        "messages",
        "instruction",
        "instructions",
        "memo",
        "reminder",
        "direction",
        "directions",
        "request",
        "task",
        "tasks",
        "notice",
        "warning",
        "info",
        "information",
        "update",
        "order",
        "orders",
        "command",
        "commands",
        "directive",
        "directives",
        "guidance",
        "attention",
        "hint",
        "hints",
        "ps",
        "rules",
        "prompt",
        "action",
    }
)
"""Words of a text written to someone ("note to ...", "instructions for ...")."""
GREETINGS = frozenset(
    {
        "dear",
        "hey",
        "hi",
        "hello",
        "attention",
        "attn",
        "yo",
        "greetings",
        "listen",
        "psst",
        "fyi",
        "ok",
        "okay",
    }
)
_READING = frozenset(
    {
        "reading",
        "processing",
        "parsing",
        "summarizing",
        "summarising",
        "handling",
        "viewing",
        "seeing",
        "analyzing",
        "analysing",
        "scanning",
        "reviewing",
        "ingesting",
    }
)
_OVERRIDING = frozenset({"ignore", "disregard", "forget", "overlook", "override"})
_EARLIER = frozenset(
    {"above", "previous", "prior", "earlier", "preceding", "former", "old", "original"}
)
_SPELLING = frozenset(".-_*·'")
_ENDS = frozenset(".!?;\n")
_LOOK = 8


def _words(text: str) -> list[str]:
    """Tokens (words and single other characters), letters spelled apart joined (``A.I.``)."""
    raw = _TOKEN.findall(text)
    out: list[str] = []
    i = 0
    while i < len(raw):
        check_budget()
        letters, j = _spelled(raw, i)
        if len(letters) < 2:
            out.append(raw[i])
            i += 1
        elif letters in NOUNS:
            out.append(letters)
            i = j
        elif letters[1:] in NOUNS:  # "a A I": an article before the letters
            out.extend((letters[0], letters[1:]))
            i = j
        else:
            out.extend(raw[i:j])
            i = j
    return out


def _spelled(raw: list[str], i: int) -> tuple[str, int]:
    """Single letters from `i`, each before one separator (``.`` ``-``) or none; the run's end."""
    letters: list[str] = []
    j = i
    while j < len(raw) and len(raw[j]) == 1 and raw[j].isalpha():
        letters.append(raw[j])
        j += 1
        if j < len(raw) and raw[j] in _SPELLING:
            j += 1
    return "".join(letters), j


def address_cue(paragraph: str) -> str | None:
    """The form that addresses a model in a paragraph (module doc), or None."""
    words: list[str] = []
    gaps: list[str] = []  # the characters between each word and the one before ("\n": start)
    gap = "\n"
    for t in _words(fold(paragraph).replace("\n", " ¶ ")):
        t = t.strip("_") or t  # "_AI_": Markdown emphasis around a word
        if t[0].isalnum() or t[0] == "_":
            if words and not gap and (words[-1], t) in _JOINED:
                words[-1] = _JOINED[(words[-1], t)]
            else:
                words.append(t)
                gaps.append(gap)
            gap = ""
        else:
            gap += "\n" if t == "¶" else t
    gaps.append(gap)  # after the last word
    for k, w in enumerate(words):
        check_budget()
        cue = (
            _addressed(words, gaps, k)
            if w in NOUNS
            else _override(words, gaps, k)
            if w in _OVERRIDING
            else None
        )
        if cue is not None:
            return cue
    return None


def _sentence_start(gap: str) -> bool:
    return any(c in _ENDS or c == ":" for c in gap)


def _addressed(words: list[str], gaps: list[str], k: int) -> str | None:
    """Whether the model word at `k` stands where a text names its addressee.

    `gaps[i]`: the characters other than words and spaces before word `i` (``gaps[k + 1]``
    is what follows word `k`).
    """
    noun, follows = words[k], gaps[k + 1][:1]
    if gaps[k].endswith("@"):
        return "@" + noun
    q = k  # the noun phrase: words[q..k], determiners and modifiers before the noun
    while q > 0 and k - q < 3 and words[q - 1] in _DETERMINERS and not gaps[q]:
        q -= 1
    p, link = q - 1, gaps[q]
    prev = words[p] if p >= 0 else ""
    if prev in ("to", "for") and not link:
        if p >= 1 and words[p - 1] in DIRECTIVES and not gaps[p]:
            return f"{words[p - 1]} {prev} ... {noun}"
        if _sentence_start(gaps[p]) and follows in (":", ",", "-"):
            return f"{prev} ... {noun}{follows}"
    if q == k and _sentence_start(link) and gaps[k + 1][:1] in (",", "!"):
        return f"{noun}{gaps[k + 1][:1]}"  # a vocative opening its sentence: "Agent, pay"
    mark = _vocative_mark(gaps[k + 1], link)
    if q == k and _sentence_start(link) and mark and noun in _GREETED:
        return f"{noun}{mark}"  # "AI; pay", "(AI) pay", "Copilot — pay", "`AI`, pay"
    if (
        noun in STRONG
        and (q < k and words[q] in _GENERIC or q == k and _sentence_start(link))
        and _obliged(words, gaps, k + 1)
    ):
        return f"{' '.join(words[q : k + 1])} {words[k + 1]}"  # "The AI must pay"
    if prev in GREETINGS and link in ("", ",") and noun in _GREETED:
        return f"{prev} {noun}"
    if prev == "you" and (link == "," and follows in (",", ":") or not link and noun in STRONG):
        return f"you, ... {noun}"
    if prev == "are" and not link and p >= 1 and words[p - 1] == "you" and noun in STRONG:
        return f"you are ... {noun}"
    nxt = words[k + 1] if k + 1 < len(words) and not gaps[k + 1] else ""
    if nxt in DIRECTIVES and gaps[k + 2][:1] in (":", "-", "") and noun in _GREETED:
        return f"{noun} {nxt}{gaps[k + 2][:1]}"
    then = words[k + 2] if k + 2 < len(words) and not gaps[k + 2] else ""
    if nxt in _READING and then in _READ:
        return f"{noun} {nxt} {then}"
    return None


_WRAPPERS = "`\"'_*)]}»”’"
_MARKS = frozenset({",", "!", ";", "—", "–", "|", "~", "…", ">", "="})
"""Marks after a lone model word that make it a vocative (not ``.``: "AI. Machine learning."
lists topics; not ``-``: "AI-generated")."""
_OBLIGING = frozenset(
    {"must", "should", "shall", "has", "have", "needs", "need", "is", "are", "ought"}
)
_GENERIC = frozenset({"the", "a", "an", "any", "all", "every", "each", "this"})
"""Determiners of a model word that names whichever model reads ("the AI", "any LLM"; not
"our AI", a product)."""
_DUTY = frozenset({"to", "required", "instructed", "expected", "obliged", "asked", "now"})


def _vocative_mark(after: str, before: str) -> str:
    """The mark that ends a model word standing alone ("AI;", "(AI)", "`AI`,"), or "".

    Wrapping quotes, emphasis and a closing bracket are passed over; a bracket that closes
    the one before the word ends it. A hyphen is not a mark ("AI-generated").
    """
    rest = after.lstrip(_WRAPPERS)
    if rest[:1] in _MARKS or rest[:2] == "->":
        return rest[:2] if rest[:2] == "->" else rest[:1]
    return ")" if not rest and ")" in after and "(" in before else ""


def _obliged(words: list[str], gaps: list[str], j: int) -> bool:
    """A word of obligation after a model word: "must", "should", "has to", "is required"."""
    if j >= len(words) or gaps[j] or words[j] not in _OBLIGING:
        return False
    if words[j] in ("must", "should", "shall", "ought"):
        return True
    return j + 1 < len(words) and not gaps[j + 1] and words[j + 1] in _DUTY


def _override(words: list[str], gaps: list[str], k: int) -> str | None:
    """An override of what came before ("Ignore the IBAN above"), within its sentence."""
    for j in range(k + 1, min(len(words), k + 1 + _LOOK)):
        if any(c in _ENDS for c in gaps[j]):
            return None
        if words[j] in _EARLIER:
            return f"{words[k]} ... {words[j]}"
    return None
