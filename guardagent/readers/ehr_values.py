"""Abstract values of EHRAgent's Python: which strings and tables an expression may hold.

A value is a join of every possibility (an over-approximation): possible strings, with `HOLE`
for a part only known at run time; tables a variable may hold; containers' elements; functions
the code defined. The string operations Python code uses to build a column or a SQL text
(`+`, `%`, `str.format`, f-strings, a few `str` methods) are modelled here; anything else
gives a hole, which a reader must treat as "chosen at run time".
"""

from __future__ import annotations

import string
from collections.abc import Iterable
from dataclasses import dataclass

HOLE = "\0"
"""Stands for a run-time part of a string the code computed (the reader cannot know it: it
may hold a quote, `||` or a name)."""

DATA_HOLE = "\1"
"""Stands for a run-time part read from the database by a tool (`GetValue`, `Calendar`,
`SQLInterpreter`), or derived from one without adding text: a value, not code."""

_MAX_STRINGS = 64  # possible values tracked per string before it becomes wholly unknown


@dataclass(frozen=True)
class Value:
    """What an expression may evaluate to; a join of every possibility (over-approximation).

    Attributes:
        strs: Possible string values; `HOLE` marks a run-time part.
        tables: eICU tables this may be (a loaded, possibly filtered table).
        indexer: Tables whose `.loc`/`.iloc`/... indexer this is, with its name.
        elems: For a list/tuple/set/dict/iterator: the join of its elements (a dict's values).
        keys: For a dict: the join of its keys.
        func: Names of functions the code defined that this may be.
        other: May be something else (a number, a GetValue result, a module, ...).
        columns: For a table: the only columns it still holds (`db[["a", "b"]]`; those were
            recorded when selected), or None for all of them.
        data: Its `other` possibilities are all values a tool read from the database.
    """

    strs: frozenset[str] = frozenset()
    tables: frozenset[str] = frozenset()
    indexer: frozenset[tuple[str, str]] = frozenset()
    elems: Value | None = None
    keys: Value | None = None
    func: frozenset[str] = frozenset()
    other: bool = False
    columns: frozenset[str] | None = None
    data: bool = False

    def join(self, other: Value) -> Value:
        """Either this or `other`."""
        if self.tables and other.tables:
            columns = (
                None
                if self.columns is None or other.columns is None
                else (self.columns | other.columns)
            )
        else:
            columns = self.columns if self.tables else other.columns
        return Value(
            cap(self.strs | other.strs),
            self.tables | other.tables,
            self.indexer | other.indexer,
            join_opt(self.elems, other.elems),
            join_opt(self.keys, other.keys),
            self.func | other.func,
            self.other or other.other,
            columns,
            (self.data or not self.other) and (other.data or not other.other),
        )


def join_opt(a: Value | None, b: Value | None) -> Value | None:
    """Join two optional parts (elements, keys): either one when the other is absent."""
    return a if b is None else (b if a is None else a.join(b))


OPAQUE = Value(other=True)
UNKNOWN_STR = Value(strs=frozenset({HOLE}))
DATA = Value(other=True, data=True)
"""A value a tool read from the database (a GetValue result, a date from Calendar)."""


def is_data(value: Value) -> bool:
    """Whether a value can only be database data (no text the code wrote, no table)."""
    return (
        value.data
        and value.other
        and not (
            value.strs
            or value.tables
            or value.indexer
            or value.func
            or value.elems is not None
            or value.keys is not None
        )
    )


def hole(value: Value) -> str:
    """The hole a non-string value leaves in text: `DATA_HOLE` for database data."""
    return (
        DATA_HOLE
        if value.data
        and not (value.tables or value.indexer or value.func or value.elems is not None)
        else HOLE
    )


def cap(strs: frozenset[str]) -> frozenset[str]:
    """Too many possible strings become one wholly unknown string (bounded work)."""
    return strs if len(strs) <= _MAX_STRINGS else frozenset({HOLE})


def join_all(values: Iterable[Value]) -> Value:
    """Any one of `values`."""
    out = Value()
    for value in values:
        out = out.join(value)
    return out


def concat(left: Value, right: Value) -> Value:
    """`left + right` for strings: every pairing; anything non-string is a hole."""
    lefts = left.strs | ({hole(left)} if left.other or left.tables else frozenset())
    rights = right.strs | ({hole(right)} if right.other or right.tables else frozenset())
    if not lefts or not rights:
        return OPAQUE
    if len(lefts) * len(rights) > _MAX_STRINGS:
        return UNKNOWN_STR
    return Value(strs=frozenset(squash(a + b) for a in lefts for b in rights))


def squash(text: str) -> str:
    """Adjacent holes are one hole: an unknown run is an unknown run (computed if any is)."""
    for pair, one in (
        (DATA_HOLE + HOLE, HOLE),
        (HOLE + DATA_HOLE, HOLE),
        (HOLE + HOLE, HOLE),
        (DATA_HOLE + DATA_HOLE, DATA_HOLE),
    ):
        while pair in text:
            text = text.replace(pair, one)
    return text


def as_text(value: Value) -> frozenset[str]:
    """The strings `str(value)` may give: its own strings, else a hole."""
    return (
        value.strs
        if value.strs and not (value.other or value.tables)
        else (value.strs | {hole(value)})
    )


def tables_in(value: Value, deep: bool = True) -> frozenset[str]:
    """Tables a value holds whole (its elements included when `deep`).

    A table narrowed to some columns (`db[["a"]]`) is left out: those columns were recorded
    when they were selected, and it holds no other.
    """
    own = value.tables if value.columns is None else frozenset()
    inner = frozenset[str]()
    if deep:
        for part in (value.elems, value.keys):
            if part is not None:
                inner |= tables_in(part)
    return own | inner | frozenset(t for t, _ in value.indexer)


def percent(template: str, args: list[Value]) -> str:
    """`template % args`: each `%s` takes its argument's text when that is one known string."""
    texts = [as_text(a) for a in args]
    out, i, n = [], 0, 0
    while i < len(template):
        ch = template[i]
        if ch != "%":
            out.append(ch)
            i += 1
            continue
        if template[i + 1 : i + 2] == "%":
            out.append("%")
            i += 2
            continue
        j = i + 1
        while j < len(template) and template[j] not in "diouxXeEfFgGcrsa":
            j += 1
        text = texts[n] if n < len(texts) else frozenset({HOLE})
        n += 1
        out.append(next(iter(text)) if template[j : j + 1] == "s" and len(text) == 1 else HOLE)
        i = j + 1
    return squash("".join(out))


_DATA_SAFE = frozenset({"lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title"})
"""String methods that keep database data data: they add no text of the code's."""


def str_method(
    text: str, attr: str, args: list[Value], kwargs: dict[str, Value] | None = None
) -> str:
    """A string method on one known value; anything not modelled is a hole.

    On text holding database data, only methods that add no text keep it data.
    """
    if DATA_HOLE in text and attr not in _DATA_SAFE:
        return HOLE
    if attr == "format":
        return format_text(text, args, kwargs or {})
    if attr in ("lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title"):
        return (
            str(getattr(text.replace(HOLE, ""), attr)())
            if HOLE not in text
            else (text if attr in ("strip", "lstrip", "rstrip") else HOLE)
        )
    if attr == "replace" and len(args) >= 2 and len(args[0].strs) == 1 and len(args[1].strs) == 1:
        old, new = next(iter(args[0].strs)), next(iter(args[1].strs))
        return (
            text.replace(old, new) if HOLE not in old + new and DATA_HOLE not in old + new else HOLE
        )
    if attr == "join" and args and args[0].elems is not None and args[0].elems.strs:
        parts = args[0].elems.strs
        return HOLE if len(parts) != 1 else squash(next(iter(parts)) + text + HOLE)
    return HOLE


def format_text(template: str, args: list[Value], kwargs: dict[str, Value] | None = None) -> str:
    """`template.format(*args)`: fields parsed with the standard library's own format parser."""
    try:
        fields = list(string.Formatter().parse(template))
    except ValueError:
        return HOLE
    out, auto = [], 0
    for literal, name, spec, conversion in fields:
        out.append(literal)
        if name is None:
            continue
        if name == "":
            index: int | None = auto
            auto += 1
        else:
            index = int(name) if name.isdigit() else None
        value = (
            args[index]
            if index is not None and index < len(args)
            else ((kwargs or {}).get(name) if index is None else None)
        )
        text = as_text(value) if value is not None and not spec and not conversion else None
        out.append(next(iter(text)) if text and len(text) == 1 else HOLE)
    return squash("".join(out))
