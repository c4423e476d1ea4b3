"""What a question must name to name a call: its tool, and every value in its role.

:func:`~guardagent.trace.predicates.conversation.asked_in_conversation` takes a user's yes
as consent only to a question that names the proposed call (see that module for the whole
rule). This module is the naming: :class:`CallNames` reads a call once (its tool's words,
its value targets, its flags) and tells whether a question names it:

- the tool by its words, or by its verb alone when no other labelled tool shares the verb
  (:mod:`.tool_words`); a misspelt word passes at ``similarity`` with ``rapidfuzz``;
- every value exactly: typed values by their key, others as the same whole words with
  their punctuation and case (:func:`_phrase`: ``../planner`` and ``Planner`` are not
  ``planner``), as the thing asked about and not only to qualify another ("the reminder
  about planner": :mod:`.qualified`), a flag by its argument's name (:class:`_Flag`);
  values of one kind in two or more arguments in the order of the label's ``args``
  (:func:`_in_order`: roles cannot swap).

Every scan here is linear in the question (one pass per value).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.found.values import extract_values, normalize_text, read_scalar
from guardagent.trace.found.written import MAX_TARGET_CHARS
from guardagent.trace.predicates.followed import followed_by_another
from guardagent.trace.predicates.options import top_arg, under
from guardagent.trace.predicates.qualified import about_another, words_of
from guardagent.trace.predicates.tool_words import (
    DIGIT_GROUPS,
    clean,
    tool_named,
    tool_words,
)
from guardagent.trace.text.kinds import Value
from guardagent.trace.thread.state import flatten


def _phrase(text: str, *, question: bool = False) -> str:
    """Text as its whole words, joined by single spaces, with one at each end.

    Words are split at whitespace and keep their punctuation, except quotes and brackets
    around them and the marks that end a clause after them (``,`` ``;`` ``:`` ``!`` ``?``):
    ``../planner``, ``/planner`` and ``planner*`` are other values than ``planner`` (another
    directory, a glob over many). A question's words also lose a closing ``.`` and Markdown
    emphasis (``**planner**``), so a value ending in those is named by no question (fail
    closed). ``4,950`` reads 4950. Case is kept: a tool compares ``Planner`` and ``planner``
    as two names (typed values that their consumers fold are compared by their keys).
    """
    text = DIGIT_GROUPS.sub("", unicodedata.normalize("NFKC", text))
    lead, trail = (
        (_QUOTES + _EMPHASIS, _QUOTES + _EMPHASIS + _MARKS + ".")
        if question
        else (_QUOTES, _QUOTES + _MARKS)
    )
    words = (w.lstrip(lead).rstrip(trail) for w in text.split())
    return " " + " ".join(w for w in words if w) + " "


def phrase_words(text: str) -> list[str]:
    """A user's or the model's text as the words a question's values are compared with."""
    return _phrase(text, question=True).split()


_QUOTES = "\"'`()[]{}<>«»“”‘’„‚"
_EMPHASIS = "*_"
_MARKS = ",;:!?。！？、"


def _wrapped(value: str) -> bool:
    """A one-word value with its own quotes, brackets or clause marks (``planner;``).

    A question's words lose those (``"planner"?``), so such a value would read as the bare
    word, which is another identifier: it is named by no question. A value of several words
    (a message, ``Hi, Bob!``) keeps reading without them.
    """
    words = value.split()
    return len(words) == 1 and (words[0][0] in _QUOTES or words[0][-1] in _QUOTES + _MARKS)


class Question:
    """One question, read once: its words and the typed values inside it.

    Attributes:
        keys: Every reading of every typed value (a call it names used a yes).
        plain: The reading an English reader gives each typed value (:func:`_plain_keys`):
            what a yes approves.
        values: Each typed value written, once: its kind and its plain keys.
        exact: The text in NFKC, case kept (a link or file name is named in its case).
    """

    def __init__(self, text: str, region: str | None) -> None:
        self.text = text
        self.exact = unicodedata.normalize("NFKC", text)
        self.phrase = _phrase(text, question=True)
        self.words = clean(text)
        found = extract_values(normalize_text(text), region=region)
        self.keys = frozenset(k for f in found for k in f.value.keys)
        values = {f.value.keys: (f.value.kind, _plain_keys(f.value)) for f in found}
        self.values = list(values.values())
        self.plain = frozenset(k for _, keys in self.values for k in keys)
        self.first: dict[str, int] = {}  # key -> where it is first written (found in order)
        for f in found:
            for k in f.value.keys:
                self.first.setdefault(k, f.start)


def _plain_keys(value: Value) -> frozenset[str]:
    """The one reading a yes to a written value approves (none when it has two).

    The lexicons and the reader are English: ``4,950`` is 4950 (a ``,`` before three digits
    groups thousands), never 4.95. ``1.500`` is 1.5 to an English reader and 1500 to the
    writer of a continental invoice the model copied: the two disagree, so it names no
    amount (a yes to "USD 1.500" approves neither 1500 nor 1.5).
    """
    if value.kind != "amount" or len(value.keys) < 2:
        return frozenset(value.keys)
    comma, dot = value.text.rfind(","), value.text.rfind(".")
    return frozenset(value.keys[:1]) if comma > dot else frozenset()


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
        self.phrase = "" if hidden or _wrapped(str(value)) else _phrase(str(value)).strip()
        self.raw = str(value)
        self.arg = arg
        self.kind = whole.kind if self.keys and whole is not None else "phrase"

    def named_in(self, question: Question, single: bool = False) -> bool:
        """Whether the question names this value (`single`: so that a yes approves it).

        A value read two ways (``5,000``: 5000 or 5) is approved only by a question that
        holds every one of its readings, one of them as an English reader reads it: "CHF 5"
        approves neither, since a bank may pay 5000.
        """
        if self.keys and single:
            return (
                self.keys <= question.keys
                and not self.keys.isdisjoint(question.plain)
                and self._in_its_case(question)
            )
        if self.keys:
            return not self.keys.isdisjoint(question.keys)
        return bool(self.phrase) and f" {self.phrase} " in question.phrase

    def _in_its_case(self, question: Question) -> bool:
        """A link or file name is written whole, in its own case.

        Its key is case-folded for matching, but a file system or a server compares paths
        as written: ``Notes.txt`` is not ``notes.txt``, nor ``/Report`` ``/report``. An
        address is compared folded, as mail systems do.
        """
        return self.kind != "url" or unicodedata.normalize("NFKC", self.raw) in question.exact

    def position(self, question: Question) -> int:
        """Where the question first names it (comparable among targets of one kind)."""
        if self.keys:
            return min(question.first[k] for k in self.keys if k in question.first)
        return question.phrase.find(f" {self.phrase} ")


FLAG_WORDS: dict[bool | None, frozenset[str]] = {
    True: frozenset({"true", "on", "yes"}),
    False: frozenset({"false", "off"}),
    None: frozenset({"null", "none"}),
}
"""How a question writes a flag's value after its name (``force true``, ``dry_run=false``)."""
_NOT_TRUE = (
    FLAG_WORDS[False]
    | FLAG_WORDS[None]
    | {"no", "n", "f", "0", "disabled", "disable", "unset", "skipped", "omitted", "never"}
)
_NOT_BEFORE = frozenset(
    {
        "no",
        "non",
        "not",
        "without",
        "skip",
        "skipping",
        "disable",
        "disabling",
        "disabled",
        "omit",
        "omitting",
        "sans",
        "minus",
        "except",
        "excluding",
        "unset",
        "never",
        "drop",
        "dropping",
    }
)
"""Words before a flag's name that turn it off (``non-recursive``, ``skipping force``)."""


class _Flag:
    """A boolean or null argument: named by its argument's name, and its value when not true.

    ``force=True`` changes what ``delete_project("planner")`` does, so a question that
    never says "force" does not approve it. A true flag is named by its name's words as a
    run of whole words ("with force", "force-delete", "recursive=true"), unless the next
    word writes another value ("force false", "force unset") or the word before turns it
    off ("non-recursive", "skipping force"); a false or null one by its name followed by
    its value ("dry_run: false", "backup=null"). The name is the path's last key
    (``options.purge``: "purge"; ``flags[0]``: "flags").
    """

    def __init__(self, path: str, value: bool | None) -> None:
        last = path.rsplit(".", 1)[-1].split("[", 1)[0]
        self.name = tool_words(last).split()
        self.value = value
        self.arg, self.kind = path, "flag"  # named by its own name: no role to swap

    def named_in(self, question: Question, single: bool = False) -> bool:
        words, size = question.words.split(), len(self.name)
        for i in range(len(words) - size + 1 if size else 0):
            if words[i : i + size] != self.name:
                continue
            after = words[i + size] if i + size < len(words) else ""
            before = words[i - 1] if i else ""
            if self.value is True and after not in _NOT_TRUE and before not in _NOT_BEFORE:
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
        elif not _content(value, region):
            values.append(_Target(value, region, top_arg(path)))
    return values, count


def _content(value: Any, region: str | None) -> bool:
    """A message body, not a target: prose over :data:`MAX_TARGET_CHARS` characters.

    Prose holds whitespace, is no typed value as a whole and does not start like a path or a
    URL: a long ``dst="/srv/share/.../attacker"`` or URL is a target (named by no realistic
    question: fail closed), else ``move_file("notes", <long path>)`` would need only "notes".
    """
    text = value if isinstance(value, str) else ""
    if len(text) <= MAX_TARGET_CHARS or not any(c.isspace() for c in text.strip()):
        return False
    head = text.lstrip()
    first = head.split(maxsplit=1)[0]
    if first[:1] in _PATH_STARTS or first[1:2] == ":" or "://" in first:
        return False  # a path (also C:), or a URL
    whole, _ = read_scalar(text, region=region)
    return whole is None or whole.kind == "text"


_PATH_STARTS = frozenset("/\\~.")


_NAMED_KINDS = frozenset({"url", "email"})
"""Typed values that name a thing (a link, a file, an address), as a plain name does."""

_ROLE_KINDS = {"url": "place", "text": "place", "phrase": "place"}
"""Kinds that take each other's role: a URL and a path are both a source or a destination."""

ANY_ORDER = ("*",)
"""An `order` that accepts values in any order (to find earlier calls that used a yes)."""


def _in_order(
    targets: list[_Target | _Flag], question: Question, order: tuple[str, ...] | None
) -> bool:
    """Values of one kind in two or more arguments are named in the label's `args` order.

    "May I move planner to notes?" names both values of ``move_file(src="notes",
    dst="planner")``, with their roles swapped; two IBANs or two amounts swap the same way.
    The order is the deployer's (the label's ``args``): the call's own order is the model's
    to choose. Without it, such a call is named by no question. Values of different kinds
    (an IBAN, an amount) cannot take each other's place; a URL, a path and a name can
    (``copy(src="/tmp/out", dst="https://...")`` uploads where the question downloads), so
    they are one kind here (:data:`_ROLE_KINDS`).
    """
    if order == ANY_ORDER:
        return True
    kinds: dict[str, list[_Target]] = {}
    for t in targets:
        if isinstance(t, _Target):
            kinds.setdefault(_ROLE_KINDS.get(t.kind, t.kind), []).append(t)
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


JOINERS = frozenset({"and", "then", "also", "plus", "afterwards", "additionally"})
"""Words that join a second request to a question (``&``, ``;`` and `` + `` too)."""


def _one_request(targets: list[_Target | _Flag], question: Question, listed: bool) -> bool:
    """The question asks for this call alone: no second request joined, no second value.

    "May I send CHF 50 to A and CHF 5,000 to B?" asks two things; a yes to it does not
    say which amount goes to which IBAN, so it approves neither payment. A question asks
    one thing when it holds no more values of a typed kind the call takes (two amounts for
    one ``amount``) than the call has, and no more joining words (:data:`JOINERS`) than the
    call's own values hold (``sales and marketing``), unless the call takes a list of two
    or more values ("bob@x.ch and alice@y.ch" as ``to``: `listed`).
    """
    wanted: dict[str, set[frozenset[str]]] = {}
    for t in targets:
        if isinstance(t, _Target) and t.keys:
            wanted.setdefault(t.kind, set()).add(t.keys)
    for kind, values in wanted.items():
        if sum(1 for k, _ in question.values if k == kind) > len(values):
            return False
    if listed:
        return True
    own = sum(_joins(t.phrase, t.raw) for t in targets if isinstance(t, _Target))
    if _joins(question.words, question.text) > own:
        return False
    if len({t.arg for t in targets if isinstance(t, _Target)}) < 2:
        return True
    flags = frozenset(f.name[0] for f in targets if isinstance(f, _Flag) and f.name)
    own = sum(_clauses(t.phrase, t.raw, flags) for t in targets if isinstance(t, _Target))
    return _clauses(question.words, question.text, flags) <= own


def _joins(words: str, text: str) -> int:
    """Joining words (:data:`JOINERS`) among `words`, and ``&``, ``;`` and `` + `` in `text`."""
    return (
        sum(1 for w in words.split() if w in JOINERS)
        + text.count("&")
        + text.count(";")
        + " ".join(text.split()).count(" + ")
    )


CLAUSE_WORDS = frozenset({"well", "along", "together", "followed", "besides"})
"""Words that add a clause ("as well as", "along with", "followed by") to a question."""


def _clauses(words: str, text: str, flags: frozenset[str] = frozenset()) -> int:
    """Clause separators: a ``,`` not before a digit, a line break, `` / ``, :data:`CLAUSE_WORDS`.

    "with" also separates, unless a flag of the call follows it (`flags`: the first word
    of each flag's name: "with force" names ``force=True``).

    A call with values in two or more arguments can take one argument's value from one
    clause and another's from the next: "May I move planner to archive, notes to trash?"
    names both values of ``move_file(src="planner", dst="trash")`` in order. A ``,`` before a
    digit groups thousands (``4,950``). One scan of the text: linear.
    """
    commas = sum(1 for i, c in enumerate(text) if c == "," and not text[i + 1 : i + 2].isdigit())
    ws = words.split()
    withs = sum(
        1
        for i, w in enumerate(ws)
        if w == "with" and ws[i + 1 : i + 2] != [] and ws[i + 1] not in flags
    )
    return (
        commas
        + text.count("\n")
        + text.count("\r")
        + " ".join(text.split()).count(" / ")
        + sum(1 for w in ws if w in CLAUSE_WORDS)
        + withs
    )


class CallNames:
    """What a question must name to name a call, read once per call (see the module)."""

    def __init__(
        self,
        call: ToolCall,
        *,
        arg: str | None = None,
        similarity: float = 85,
        match: str = "both",
        region: str | None = None,
        order: tuple[str, ...] | None = None,
        verb_alone: bool = True,
        single: bool = True,
    ) -> None:
        self.tool = tool_words(call.name)
        self.targets, self.values = _targets(call, arg, region)
        self.arg, self.similarity, self.match, self.region = arg, similarity, match, region
        self.order = tuple(order) if order is not None else None
        self.verb_alone, self.single = verb_alone, single
        self.listed = any(isinstance(v, list | tuple) and len(v) > 1 for v in call.args.values())

    def named_by(self, question: str | Question) -> bool:
        """Whether a question names the call: its tool and every value, or either.

        With `single` (what a yes approves), the question must ask for this call alone
        (:func:`_one_request`) and name each value by its one plain reading; without it
        (which calls a yes was used by), any naming counts.
        """
        q = question if isinstance(question, Question) else Question(question, self.region)
        if self.single and not _one_request(self.targets, q, self.listed):
            return False
        by_tool = tool_named(self.tool, q.words, self.similarity, self.verb_alone)
        if self.arg is not None or self.values:  # every value (of the argument) named
            target_named = (
                bool(self.targets)
                and all(t.named_in(q, self.single) for t in self.targets)
                and not (self.single and any(self._about_another(t, q) for t in self.targets))
                and _in_order(self.targets, q, self.order)
            )
        else:
            target_named = self.match == "both"  # no value at all: its tool names it
        if self.match == "both":
            return by_tool and target_named
        return target_named if self.arg is not None else by_tool or target_named

    def _about_another(self, target: _Target | _Flag, question: Question) -> bool:
        """The question writes this value only to qualify another thing (:mod:`.qualified`).

        Names, links, file names and addresses are read so (an address case-folded, as it
        is compared); amounts, IBANs and other typed values, and flags, are not: they fill
        a role ("CHF 50 *for* the invoice"). A name is also read for what follows it
        (:mod:`.followed`: "the project planner *tasks*", "planner *on staging*").
        """
        if not isinstance(target, _Target) or (target.keys and target.kind not in _NAMED_KINDS):
            return False
        tool = self.tool.split()
        passed = frozenset(tool) | frozenset(tool_words(target.arg.rsplit(".", 1)[-1]).split())
        others = frozenset(
            w
            for t in self.targets
            if t is not target and isinstance(t, _Target)
            for w in words_of(t.phrase)
        )
        value, asked = target.phrase, question.phrase
        if target.kind == "email":
            value, asked = value.casefold(), asked.casefold()
        if about_another(
            value, asked, passed, frozenset(tool[:1]), others, roles=bool(target.keys)
        ):
            return True
        if target.keys:  # an address or a link fills a role: in "send bob@x.ch the email
            return False  # titled Q3" what follows it is the call's object, not bob's
        around = frozenset(
            w for t in self.targets for w in tool_words(t.arg.rsplit(".", 1)[-1]).split()
        )  # every argument's name: "the *project* planner"
        flags = frozenset(
            w
            for t in self.targets
            if isinstance(t, _Flag)
            for w in [*t.name, t.arg.rsplit(".", 1)[-1].split("[", 1)[0].casefold()]
        )  # "dry_run=false"
        return followed_by_another(value, question.exact, passed | around, others | flags)

    @property
    def flag_words(self) -> frozenset[str]:
        """The words of the call's flag names ("force").

        A question may write them before its act ("May I force-delete planner?").
        """
        return frozenset(w for t in self.targets if isinstance(t, _Flag) for w in t.name)

    @property
    def phrases(self) -> list[str]:
        """The call's untyped values as a question writes them (case kept).

        An answer may restate them ("Yes, delete planner"), and nothing else (:mod:`.answer`).
        """
        return [
            t.phrase for t in self.targets if isinstance(t, _Target) and not t.keys and t.phrase
        ]


def names_call(question: str, call: ToolCall, **options: Any) -> bool:
    """Whether a question names a call (options as :class:`CallNames`)."""
    return CallNames(call, **options).named_by(question)
