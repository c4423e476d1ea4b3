"""Predicates over the proposed call's own arguments: values, lists, text, numbers, names.

"At most 1,000 per transfer", "only these three sites", "no subject that mentions a
password", "the recipient is one of my contacts, however the agent spelled the name": rules
about this call, not the run. Each predicate reads the argument's scalar values (an
argument path such as ``to``, ``payee.iban`` or ``to[0]``; ``"*"`` every argument) and
tests each value:

- ``match="every"`` (the default for a named argument): every value passes. A named
  argument with no value gives None (open: an allow-list rule that needs it denies).
- ``match="any"`` (the default for ``"*"``): some value passes. No value gives False.

A value a test cannot read (a number that is not one, ``1,500`` read both as 1500 and 1.5
when the readings disagree) gives None for that value, and the three-valued result is None
unless another value settles it. Text is compared after normalisation
(:func:`guardagent.trace.found.values.normalize_text`: NFKC, case folding, format characters
removed), so ``PAYPAL`` and ``ｐａｙｐａｌ`` are one word; patterns are written lower-case. A
list of expected values may be a section of the user's records (``"@contacts"``:
:mod:`guardagent.trace.sources.records`).
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import re2
from rapidfuzz import fuzz

from guardagent.trace.found.addresses import delivered
from guardagent.trace.found.values import normalize_text, read_scalar
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.options import under
from guardagent.trace.sources.records import section_ref
from guardagent.trace.sources.temporal import sent_pieces
from guardagent.trace.thread.state import flatten

Test = Callable[[Any], bool | None]
OPERATORS: dict[str, Callable[[Decimal, Decimal], bool]] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
}
SCORERS: dict[str, Callable[..., float]] = {
    "ratio": fuzz.ratio,
    "partial_ratio": fuzz.partial_ratio,
    "token_sort_ratio": fuzz.token_sort_ratio,
    "token_set_ratio": fuzz.token_set_ratio,
    "WRatio": fuzz.WRatio,
}
_SHOWN = 60


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "...'"


def _text(value: Any) -> str | None:
    """A scalar as normalised text (booleans as ``true``/``false``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return normalize_text(str(value)).strip()
    return None


def _judge(
    facts: TraceFacts, name: str, arg: str, match: str | None, test: Test, what: str
) -> Fact:
    """Apply a test to the argument's values and combine them (see the module docstring)."""
    mode = match or ("any" if arg == "*" else "every")
    leaves = [
        (p, v)
        for p, v in flatten(facts.trace.call.args)
        if (arg == "*" or under(p, arg)) and v is not None
    ]
    if not leaves:
        which = "no argument" if arg == "*" else f"argument {arg!r}"
        return Fact(name, None if mode == "every" else False, (), f"{which} has no value")
    results = [(p, v, _as_sent(v, test, mode, _header(facts, p))) for p, v in leaves]
    want: bool | None
    if mode == "every":
        want = (
            False
            if any(r is False for *_, r in results)
            else (None if any(r is None for *_, r in results) else True)
        )
    else:
        want = (
            True
            if any(r is True for *_, r in results)
            else (None if any(r is None for *_, r in results) else False)
        )
    deciding = [(p, v, r) for p, v, r in results if r is want] or results
    shown = "; ".join(
        f"{p} {_show(v)}: "
        + (f"cannot be read ({what})" if r is None else what if r else f"not {what}")
        for p, v, r in deciding[:3]
    )
    return Fact(name, want, (), shown)


def _combine(verdicts: Sequence[bool | None], mode: str) -> bool | None:
    """Three-valued ``all`` (`mode` ``every``) or ``any`` of some verdicts."""
    settles = mode != "every"  # every: one False settles it; any: one True
    if settles in verdicts:
        return settles
    return None if None in verdicts else not settles


def _as_sent(value: Any, test: Test, mode: str, header: bool) -> bool | None:
    """Test a value as written and, when it holds addresses, as the mail server reads it.

    ``eve@evil.io, bob@x.ch`` ends in ``@x.ch`` as text, but the server sends to both, and
    ``Bob <bob@evil.io>`` is no ``*@evil.io`` as text, yet is sent there. A string holding
    ``@`` is also read as its addresses, each tested as ``local@domain`` and combined as
    `mode` combines values, in every reading a mail stack may take
    (:func:`~guardagent.trace.sources.temporal.sent_pieces`: an RFC 5322 list, or the addresses
    inside the text; :func:`~guardagent.trace.found.addresses.delivered`: the text split at any
    whitespace, control or special character, and, for an argument that names recipients
    (`header`), Python's ``email.utils.getaddresses``). An address that does not validate
    cannot be read (None), and so is a value with a line break (a header injection), or a
    recipient written with a look-alike ``@`` (``＠``: NFKC makes it ``@``, the mail
    server does not). When the readings disagree the value is open (None): a rule that
    needs it either way denies, whichever way the rule is written.
    """
    whole = test(value)
    for read in [*_address_readings(value, header), *_path_readings(value)]:
        if _combine([None if p is None else test(p) for p in read], mode) != whole:
            return None
    return whole


def _address_readings(value: Any, header: bool) -> list[Sequence[str | None]]:
    """The readings of a value as addresses (each a list of addresses, None: unreadable)."""
    if not isinstance(value, str):
        return []
    if "@" not in value:  # a look-alike @ the server does not read as one
        return [[None]] if header and "@" in normalize_text(value) else []
    return [r for r in (sent_pieces(value), delivered(value, header)) if r is not None]


def _path_readings(value: Any) -> list[Sequence[str | None]]:
    """A value with a ``.`` or ``..`` path segment, read as a file system resolves it.

    ``/srv/docs/../../etc/passwd`` matches ``/srv/docs/*`` as text; the file system opens
    ``/etc/passwd``. Backslashes and percent-encoded dots are read as a Windows or a URL
    consumer reads them; a reading that disagrees with the text leaves the value open.
    """
    if not isinstance(value, str):
        return []
    text = unquote(value).replace("\\", "/")
    if not any(segment in (".", "..") for segment in text.split("/")):
        return []
    return [[posixpath.normpath(text)]]


def _header(facts: TraceFacts, path: str) -> bool:
    """Whether the mail stack may read the argument as a header (it names recipients).

    Yes for an argument the tool's label declares among its ``recipients``, and for every
    argument of a tool with no label, or of a ``send`` or ``irreversible`` tool that
    declares none: nothing says it does not. A ``read``, ``write`` or ``navigate`` tool
    sends no mail (a document's text is not read as a ``To:`` header).
    """
    label = facts.labels.label(facts.trace.call.name)
    if label.recipients:
        return any(under(path, r) for r in label.recipients)
    return not label.labelled or label.effect in ("send", "irreversible")


def _equal(actual: Any, expected: Any, region: str | None) -> bool | None:
    """Equal by kind; None when the readings of an ambiguous value disagree.

    ``25,000`` reads 25000 and 25: it is neither equal nor unequal to ``25`` (the form
    that takes it decides), so a rule that needs the answer either way denies.
    """
    if isinstance(expected, bool) or isinstance(actual, bool):
        return actual is expected
    a, _ = read_scalar(actual, region=region)
    e, _ = read_scalar(expected, region=region)
    if a is not None and e is not None and a.keys and e.keys:
        hits = {key in e.keys for key in a.keys}
        return hits.pop() if len(hits) == 1 else None
    return _text(actual) == _text(expected)


def _same_text(actual: Any, expected: Any) -> bool | None:
    """Equal as normalised text (NFKC, case folding, format characters removed).

    ``5000`` is not ``$5,000`` and ``09/30/2024`` is not ``2024-09-30``: a list of allowed
    values is a list of spellings unless the policy asks for the typed reading.
    """
    a, e = _text(actual), _text(expected)
    return None if a is None or e is None else a == e


COMPARISONS: dict[str, Callable[[Any, Any, str | None], bool | None]] = {
    "text": lambda a, e, _region: _same_text(a, e),
    "typed": _equal,
}
"""How ``arg_in`` / ``arg_equals`` compare a value with an expected one (`compare=`)."""


def _among(
    actual: Any, items: Sequence[Any], region: str | None, compare: str = "typed"
) -> bool | None:
    """Equal to one of `items` (three-valued: see :func:`_equal`)."""
    same = COMPARISONS[compare]
    verdicts = {same(actual, e, region) for e in items}
    return True if True in verdicts else (None if None in verdicts else False)


def _expected(facts: TraceFacts, values: Any) -> tuple[Sequence[Any] | None, str]:
    """A list of expected values, or a records section's values; None when it is missing."""
    ref = section_ref(values)
    if ref is None:
        items = values if isinstance(values, list | tuple) else [values]
        return items, ", ".join(_show(v) for v in items[:5]) + (", ..." if len(items) > 5 else "")
    section = facts.records.section(ref)
    if section is None:
        known = ", ".join(facts.records.names()) or "none"
        return None, f"the user's records have no section {ref!r} (sections: {known})"
    return section.items, f"the user's records: {section.describe()}"


@predicate
def arg_equals(
    facts: TraceFacts, arg: str, value: Any, match: str | None = None, compare: str = "typed"
) -> Fact:
    """The argument's values equal `value` (by kind: ``2,500.00`` equals ``2500``).

    ``compare="text"`` asks for the same normalised text instead (see :func:`arg_in`).
    """
    region, same = facts.labels.phone_region, COMPARISONS[compare]
    how = "" if compare == "typed" else " as text"
    return _judge(
        facts,
        "arg_equals",
        arg,
        match,
        lambda v: same(v, value, region),
        f"equals {_show(value)}{how}",
    )


@predicate
def arg_in(
    facts: TraceFacts, arg: str, values: Any, match: str | None = None, compare: str = "text"
) -> Fact:
    """The argument's values are among `values` (a list, or ``"@section"`` of the records).

    By default a value is in the list when it is one of its entries as normalised text
    (:func:`_same_text`): an allow-list of ids, names or sites lists spellings, and
    ``5000`` is not ``"$5,000"``. ``compare="typed"`` reads both sides by kind, as
    :func:`arg_equals` does (an amount, a date, an IBAN, a URL by its key: ``5000`` is
    ``"$5,000"``, ``https://www.shop.example.com/`` is ``shop.example.com``), and is open
    when an ambiguous value's readings disagree. A block-list (``NOT arg_in(...)``) wants the
    typed reading: by text, a re-spaced IBAN or another spelling of a site is not in it.
    """
    items, where = _expected(facts, values)
    if items is None:
        return Fact("arg_in", None, (), where)
    region = facts.labels.phone_region
    how = "by kind" if compare == "typed" else "as text"
    return _judge(
        facts,
        "arg_in",
        arg,
        match,
        lambda v: _among(v, items, region, compare),
        f"in {where} ({how})",
    )


@predicate
def arg_contains(facts: TraceFacts, arg: str, text: str, match: str | None = None) -> Fact:
    """The argument's values contain `text` (normalised substring)."""
    needle = normalize_text(text).strip()

    def test(v: Any) -> bool | None:
        t = _text(v)
        return None if t is None else needle in t

    return _judge(facts, "arg_contains", arg, match, test, f"contains {_show(text)}")


@predicate
def arg_glob(facts: TraceFacts, arg: str, pattern: str, match: str | None = None) -> Fact:
    """The argument's values match a glob (``*``, ``?``, ``[abc]``) as a whole."""
    compiled = _glob(normalize_text(pattern).strip())

    def test(v: Any) -> bool | None:
        t = _text(v)
        return None if t is None else compiled.fullmatch(t) is not None

    return _judge(facts, "arg_glob", arg, match, test, f"matches {_show(pattern)}")


@predicate
def arg_match(
    facts: TraceFacts, arg: str, regex: str, match: str | None = None, raw: bool = False
) -> Fact:
    """An RE2 pattern matches somewhere in each value (normalised, or as written with raw)."""
    compiled = _re2(regex)

    def test(v: Any) -> bool | None:
        t = (
            (str(v) if isinstance(v, str | int | float) and not isinstance(v, bool) else _text(v))
            if raw
            else _text(v)
        )
        return None if t is None else compiled.search(t) is not None

    return _judge(facts, "arg_match", arg, match, test, f"matches /{regex}/")


@predicate
def arg_compare(
    facts: TraceFacts, arg: str, op: str, number: float, match: str | None = None
) -> Fact:
    """The argument's values, read as numbers, compare with `number` (``"<="`` etc.).

    A value that is not an amount, reads two ways, or is negative is open (a rule that
    needs it denies): ``-5000 <= 2000`` must not pass a payment limit.
    """
    compare, bound = OPERATORS[op], Decimal(repr(number) if isinstance(number, float) else number)

    def test(v: Any) -> bool | None:
        whole, _ = read_scalar(v, region=None)
        if whole is None or whole.kind != "amount":
            return None
        numbers = [Decimal(k.removeprefix("amount:")) for k in whole.keys]
        if any(n < 0 or not n.is_finite() for n in numbers):
            return None  # a negative amount moves money the other way, or is refused: open
        verdicts = {compare(n, bound) for n in numbers}
        return verdicts.pop() if len(verdicts) == 1 else None

    return _judge(facts, "arg_compare", arg, match, test, f"{op} {number}")


@predicate
def arg_similar(
    facts: TraceFacts,
    arg: str,
    value: Any,
    threshold: float = 90,
    scorer: str = "ratio",
    match: str | None = None,
) -> Fact:
    """The argument's values are at least `threshold` (0-100) similar to one of `value`.

    `value` is a string, a list, or ``"@section"`` of the records; `scorer` a
    :mod:`rapidfuzz.fuzz` scorer (``ratio``, ``partial_ratio``, ``token_sort_ratio``,
    ``token_set_ratio``, ``WRatio``) over normalised text.
    """
    items, where = _expected(facts, value)
    if items is None:
        return Fact("arg_similar", None, (), where)
    score = SCORERS[scorer]
    wanted = [t for t in (_text(e) for e in items) if t]

    def test(v: Any) -> bool | None:
        t = _text(v)
        if t is None:
            return None
        return any(score(t, w, processor=None) >= threshold for w in wanted)

    return _judge(facts, "arg_similar", arg, match, test, f"{scorer} >= {threshold} with {where}")


# -- compiled patterns ---------------------------------------------------------------------


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False
    return options


@lru_cache(maxsize=1024)
def _re2(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise PredicateSpecError(
            f"{pattern!r} is not an RE2 pattern ({detail}); RE2 has no "
            "backreferences and no look-around"
        ) from None


def glob_regex(pattern: str) -> str:
    """An RE2 pattern for a glob, deciding as :func:`fnmatch.fnmatchcase` does.

    ``*`` any run, ``?`` one character, ``[..]`` / ``[!..]`` sets: each set is translated
    by :func:`fnmatch.translate` itself (its ranges, escapes and empty ranges), the rest
    here, so the result has no look-around and RE2 matches it in linear time.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i + (1 if i < n and pattern[i] == "!" else 0)
            j += 1 if j < n and pattern[j] == "]" else 0
            end = pattern.find("]", j)
            if end < 0:
                out.append(re.escape(c))
                continue
            one = fnmatch.translate(pattern[i - 1 : end + 1])
            body = one.removeprefix("(?s:").removesuffix(r")\Z")
            out.append(r"[^\x00-\x{10FFFF}]" if body == "(?!)" else body)  # (?!): never
            i = end + 1
        else:
            out.append(re.escape(c))
    return "(?s)" + "".join(out)


@lru_cache(maxsize=1024)
def _glob(pattern: str) -> Any:
    return _re2(glob_regex(pattern))


# -- option checks -------------------------------------------------------------------------


def _arg_and_match(given: dict[str, Any]) -> None:
    if not isinstance(given.get("arg"), str) or not given["arg"]:
        raise PredicateSpecError("arg must be an argument name, a path or '*'")
    if given.get("match") not in (None, "any", "every"):
        raise PredicateSpecError(f"match must be 'any' or 'every', not {given['match']!r}")
    if given.get("compare", "text") not in COMPARISONS:
        raise PredicateSpecError(f"compare must be 'text' or 'typed', not {given['compare']!r}")


def _values_option(raw: Any, key: str) -> None:
    if isinstance(raw, str) and raw.startswith("@") and section_ref(raw) is None:
        raise PredicateSpecError(f"{key}: {raw!r} is not a records section name")
    if isinstance(raw, list | tuple) and not raw:
        raise PredicateSpecError(f"{key}: an empty list never matches")


@checks("arg_equals")
def _check_equals(given: dict[str, Any]) -> None:
    _arg_and_match(given)
    if not isinstance(given["value"], str | int | float | bool):
        raise PredicateSpecError(
            "value must be a string, a number or true/false (arg_in takes a list)"
        )


@checks("arg_in")
def _check_in(given: dict[str, Any]) -> None:
    _arg_and_match(given)
    if not isinstance(given["values"], list | tuple) and section_ref(given["values"]) is None:
        raise PredicateSpecError("values must be a list or '@section' of the user's records")
    _values_option(given["values"], "values")


@checks("arg_contains")
def _check_contains(given: dict[str, Any]) -> None:
    _arg_and_match(given)
    if not isinstance(given["text"], str) or not normalize_text(given["text"]).strip():
        raise PredicateSpecError("text must be a non-empty string")


@checks("arg_glob")
def _check_glob(given: dict[str, Any]) -> None:
    _arg_and_match(given)
    if not isinstance(given["pattern"], str):
        raise PredicateSpecError("pattern must be a string")
    _glob(normalize_text(given["pattern"]).strip())


@checks("arg_match")
def _check_match(given: dict[str, Any]) -> None:
    _arg_and_match(given)
    if not isinstance(given["regex"], str) or not isinstance(given["raw"], bool):
        raise PredicateSpecError("regex must be a string and raw True or False")
    _re2(given["regex"])


@checks("arg_compare")
def _check_compare(given: dict[str, Any]) -> None:
    _arg_and_match(given)
    if given["op"] not in OPERATORS:
        raise PredicateSpecError(f"op must be one of {' '.join(OPERATORS)}, not {given['op']!r}")
    number = given["number"]
    if isinstance(number, bool) or not isinstance(number, int | float) or number != number:
        raise PredicateSpecError(f"number must be a number, not {number!r}")


@checks("arg_similar")
def _check_similar(given: dict[str, Any]) -> None:
    _arg_and_match(given)
    _values_option(given["value"], "value")
    threshold = given["threshold"]
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not (0 < threshold <= 100)
    ):
        raise PredicateSpecError(f"threshold must be a number in (0, 100], not {threshold!r}")
    if given["scorer"] not in SCORERS:
        raise PredicateSpecError(f"scorer must be one of {', '.join(SCORERS)}")
