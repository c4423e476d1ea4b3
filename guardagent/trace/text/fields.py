r"""Trust per field: the parts of a trusted tool's result that others can write.

A trusted tool returns the user's own records, but some fields of a record are written by
someone else: a bank transaction's subject (the sender chose it), a calendar invite's title
and description (the organiser), a contact's note (whoever sent the card). The deployer
names those fields in the tool's label, and this module splits each result of the tool into
the trusted rest and one untrusted part per field path, so provenance reads the attacker's
text as untrusted without knowing about fields at all.

Label keys (see :mod:`guardagent.trace.document.labels`)::

    get_transactions:
      results: trusted
      result_format: json            # json (default) | yaml | listing
      untrusted_fields: ["$[*].subject", "$.pending[*].subject"]
    search_contacts:
      results: trusted
      result_format: listing         # one record per line, cells split on "|"
      columns: 4                     # every record has exactly 4 cells
      untrusted_fields: ["$[*][3]"]  # the 4th cell (from 0) of every line: the note

Path syntax (a small, fixed subset of JSONPath): ``$`` (the whole result), then steps
``.name`` (a key: letters, digits, ``_`` and ``-``), ``['any key']``, ``[*]`` (every
element of a list), ``.*`` (every value of a mapping), ``[N]`` (element N from 0; in a
listing, record ``$[N]`` or cell ``$[*][N]``) and ``[?(@.name OP number)]`` (the elements
of a list whose field compares with the number, OP one of ``< <= > >= == !=``: an incoming
transfer is ``$[?(@.amount > 0)]``; an element without that field, or with anything but a
plain number there, is selected too, since a filter selects what is untrusted). The value a
path reaches is untrusted whole (an object or list: all of it). A key that is absent, or
``null`` on the way, reaches nothing; a step that meets the wrong shape (``[*]`` on a
string) means the result is not the structure the label describes.

Listings escape nothing: text others write in a cell can hold ``|`` and newlines and so
forge the rest of its line and whole lines after it (a cell that reads as empty may begin
with the newline). A listing is therefore cut at its first untrusted cell: that cell and
everything after it are one untrusted part, and only the lines and cells before it are
trusted. That suits a one-record answer (a contact lookup) with the untrusted columns last;
a tool returning many records should return JSON, which escapes.

Fail closed: a result that does not parse as its ``result_format`` (not JSON, YAML with
tags, anchors or over-deep nesting, a listing line with another number of cells than
``columns``: an injected ``|`` shifts cells), or that a path meets with the wrong shape, is
untrusted whole. JSON and YAML are read by their parsers, so a tool must write them with a
serializer (which escapes), not by pasting text into a template.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

ResultFormat = Literal["json", "yaml", "listing"]
RESULT_FORMATS: tuple[ResultFormat, ...] = ("json", "yaml", "listing")

UNPARSED = "unparsed"
"""The field part naming a whole result that did not read as its structure."""

_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_MAX_NESTING = 64

Step = tuple[Literal["key", "index", "each", "where"], Any]

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    ">": operator.gt,
}  # two-character operators first: they are tried in this order


class PathError(ValueError):
    """A field path outside the supported syntax."""


class _Mismatch(Exception):
    """The result is not the structure the label describes."""


@dataclass(frozen=True)
class FieldPath:
    """A compiled field path.

    Attributes:
        text: The path as written in the label (it names the untrusted part).
        steps: ``("key", name)``, ``("index", n)``, ``("each", None)`` or
            ``("where", (name, operator, number))``.
    """

    text: str
    steps: tuple[Step, ...]


def parse_path(text: str) -> FieldPath:
    """Compile a field path (see the module docstring).

    Raises:
        PathError: not ``$`` followed by supported steps.
    """
    if not isinstance(text, str) or not text.startswith("$"):
        raise PathError(f"a field path starts with '$': {text!r}")
    steps: list[Step] = []
    i, n = 1, len(text)
    while i < n:
        if text.startswith(".*", i):
            steps.append(("each", None))
            i += 2
        elif text[i] == ".":
            j = i + 1
            while j < n and text[j] in _NAME_CHARS:
                j += 1
            if j == i + 1:
                raise PathError(f"{text!r}: a name must follow '.' at {i}")
            steps.append(("key", text[i + 1 : j]))
            i = j
        elif text.startswith("[?(@.", i):
            j = text.find(")]", i)
            if j < 0:
                raise PathError(f"{text!r}: unclosed [?(...)] at {i}")
            steps.append(("where", _condition(text, text[i + 5 : j])))
            i = j + 2
        elif text.startswith("[*]", i):
            steps.append(("each", None))
            i += 3
        elif text.startswith("['", i):
            j = text.find("']", i + 2)
            if j < 0:
                raise PathError(f"{text!r}: unclosed ['...'] at {i}")
            steps.append(("key", text[i + 2 : j]))
            i = j + 2
        elif text[i] == "[":
            j = text.find("]", i)
            digits = text[i + 1 : j] if j > 0 else ""
            if not digits.isdigit() or not digits.isascii():
                raise PathError(f"{text!r}: expected [*], [N] or ['key'] at {i}")
            steps.append(("index", int(digits)))
            i = j + 1
        else:
            raise PathError(f"{text!r}: unexpected {text[i]!r} at {i}")
    return FieldPath(text, tuple(steps))


def _condition(text: str, inner: str) -> tuple[str, str, float]:
    """``name OP number`` of a ``[?(@.name OP number)]`` step."""
    j = 0
    while j < len(inner) and inner[j] in _NAME_CHARS:
        j += 1
    name, rest = inner[:j], inner[j:].strip()
    op = next((o for o in _COMPARE if rest.startswith(o)), None)
    try:
        number = float(rest[len(op) :].strip()) if op and name else math.nan
    except ValueError:
        number = math.nan
    if op is None or not math.isfinite(number):
        raise PathError(
            f"{text!r}: a filter is [?(@.name OP number)] with OP one of {', '.join(_COMPARE)}"
        )
    return name, op, number


def _kept(item: Any, condition: tuple[str, str, float]) -> bool:
    """Whether a filter keeps a list element; one it cannot judge is kept (untrusted).

    A filter selects what is untrusted, so an element that is not a mapping, lacks the
    field, or holds no plain finite number there is kept: fail closed.
    """
    name, op, number = condition
    value = item.get(name) if isinstance(item, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    if isinstance(value, float) and not math.isfinite(value):
        return True
    return _COMPARE[op](float(value), number)


# -- reading a result ------------------------------------------------------------------------


def _nesting_ok(value: Any) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children: Any
        if isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= _MAX_NESTING:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def _yaml(text: str) -> Any:
    import yaml

    from guardagent.policy.screen import screen_yaml

    if screen_yaml(text) is not None or ("&" in text and _has_anchor(text)):
        raise _Mismatch
    try:
        return yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError) as exc:  # an int over 4,300 digits
        raise _Mismatch from exc


def _has_anchor(text: str) -> bool:
    """Anchors and aliases share nodes: a walk over them could be exponential, so refuse."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        while loader.check_event():
            event = loader.get_event()  # type: ignore[no-untyped-call]
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                return True
    except yaml.YAMLError:
        return True
    finally:
        loader.dispose()
    return False


def _structure(text: str, fmt: ResultFormat) -> Any:
    if fmt == "yaml":
        value = _yaml(text)
    else:
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise _Mismatch from exc
    if not _nesting_ok(value):
        raise _Mismatch
    return value


def _reach(box: list[Any], path: FieldPath) -> list[tuple[Any, Any]]:
    """``(container, key)`` of every value the path reaches (`box` holds the whole result)."""
    places: list[tuple[Any, Any]] = [(box, 0)]
    for kind, arg in path.steps:
        nxt: list[tuple[Any, Any]] = []
        for parent, key in places:
            node = parent[key]
            if node is None:
                continue
            if kind == "key":
                if not isinstance(node, dict):
                    raise _Mismatch
                if arg in node:
                    nxt.append((node, arg))
            elif kind == "index":
                if not isinstance(node, list):
                    raise _Mismatch
                if isinstance(arg, int) and arg < len(node):
                    nxt.append((node, arg))
            elif kind == "where":
                if not isinstance(node, list):
                    raise _Mismatch
                nxt.extend((node, k) for k, item in enumerate(node) if _kept(item, arg))
            elif isinstance(node, list):
                nxt.extend((node, k) for k in range(len(node)))
            elif isinstance(node, dict):
                nxt.extend((node, k) for k in node)
            else:
                raise _Mismatch
        places = nxt
    return places


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _render(root: Any) -> str:
    return _text(root)


def _split_listing(
    text: str, paths: tuple[FieldPath, ...], columns: int | None
) -> tuple[str, list[tuple[str, str]]]:
    """A listing cut at its first untrusted cell: that cell and all after it are untrusted.

    Nothing escapes a listing's separators, so text others write in one cell, even one that
    reads as empty (a newline first), can forge the rest of its line and whole lines after
    it; only what comes before it is the tool's own.
    """
    rows = [[cell.strip() for cell in line.split("|")] for line in text.split("\n") if line.strip()]
    if columns is not None and any(len(row) != columns for row in rows):
        raise _Mismatch
    box: list[Any] = [rows]
    where = {id(row): i for i, row in enumerate(rows)}
    cuts: list[tuple[int, int, str]] = []
    for path in paths:
        for parent, key in _reach(box, path):
            if parent is box:
                cuts.append((0, 0, path.text))
            elif parent is rows:
                cuts.append((key, 0, path.text))
            elif id(parent) in where:
                cuts.append((where[id(parent)], key, path.text))
    if not cuts:
        return _lines(rows), []
    row, cell, name = min(cuts)
    trusted = _lines([*rows[:row], *([rows[row][:cell]] if cell else [])])
    return trusted, [(name, _lines([rows[row][cell:], *rows[row + 1 :]]))]


def _lines(rows: list[list[str]]) -> str:
    return "\n".join(" | ".join(cells) for cells in rows)


def split_result(
    text: str,
    paths: tuple[FieldPath, ...],
    fmt: ResultFormat = "json",
    columns: int | None = None,
    also: Callable[[str], str | None] | None = None,
) -> tuple[str, list[tuple[str, str]]]:
    """A trusted tool's result split into its trusted rest and its untrusted fields.

    Args:
        text: The result as the trace gives it.
        paths: The label's untrusted field paths.
        fmt: How the tool writes its results.
        columns: For a listing, the number of cells of every line.
        also: For a JSON or YAML result, a test of each string the paths left trusted:
            the name of the part it goes to (its author's words, not the record's:
            :mod:`guardagent.trace.found.trusted_addressed`), or None. A listing's cells are
            not read so (its rest is read as text by the caller).

    Returns:
        ``(trusted text, [(part name, untrusted text), ...])``: one part per path that
        reached something (its values one per line; in a listing, one part: the first
        untrusted cell and everything after it), or, when the result is not the
        structure, ``("", [("unparsed", text)])``: the whole result untrusted.
    """
    box: list[Any] = []
    try:
        if fmt == "listing":
            return _split_listing(text, paths, columns)
        box.append(_structure(text, fmt))
        reached = [(p, _reach(box, p)) for p in paths]
    except _Mismatch:
        return "", [(UNPARSED, text)]
    parts: list[tuple[str, str]] = []
    for path, places in reached:
        values = [_text(parent[key]) for parent, key in places if parent[key] is not None]
        if values:
            parts.append((path.text, "\n".join(values)))
    for _, places in reached:  # blank only after every path has read its values
        for parent, key in places:
            parent[key] = None
    if also is not None:
        parts.extend(_strings_apart(box, also))
    return ("" if box[0] is None else _render(box[0])), parts


def _strings_apart(box: list[Any], also: Callable[[str], str | None]) -> list[tuple[str, str]]:
    """Take out of the structure each string `also` names a part for (walked without recursion)."""
    found: dict[str, list[str]] = {}
    stack: list[tuple[Any, Any]] = [(box, 0)]
    while stack:
        parent, key = stack.pop()
        node = parent[key]
        if isinstance(node, str):
            part = also(node)
            if part is not None:
                found.setdefault(part, []).append(node)
                parent[key] = None
        elif isinstance(node, dict):
            stack.extend((node, k) for k in reversed(list(node)))
        elif isinstance(node, list):
            stack.extend((node, k) for k in reversed(range(len(node))))
    return [(part, "\n".join(texts)) for part, texts in found.items()]


def parse_structure(text: str, fmt: ResultFormat) -> Any:
    """A JSON or YAML result as its parser reads it (anchors and tags refused), or None."""
    try:
        return _structure(text, fmt)
    except _Mismatch:
        return None


class NotStructured(ValueError):
    """A result that is not the structure its label describes (or a path meets the wrong shape)."""


def values_at(
    text: str,
    path: FieldPath,
    fmt: ResultFormat = "json",
    columns: int | None = None,
    untrusted: tuple[FieldPath, ...] = (),
) -> list[Any]:
    """Every value `path` reaches in a tool's whole result, read as the label says.

    JSON and YAML are read whole by their parsers, untrusted fields included: a serializer
    escapes what others write, so the structure (which record, which field) is the tool's
    even where a field's text is not. A listing escapes nothing, so only its cells before
    the first `untrusted` one are read (as :func:`split_result` trusts them). YAML is read
    whatever the label's `untrusted_fields` (anchors, tags and over-deep nesting refused).

    Raises:
        NotStructured: the result does not parse as `fmt`, or the path meets the wrong shape.
    """
    try:
        if fmt == "listing":
            trusted, _ = _split_listing(text, untrusted, columns)
            root: Any = [
                [cell.strip() for cell in line.split("|")]
                for line in trusted.split("\n")
                if line.strip()
            ]
        else:
            root = _structure(text, fmt)
        box = [root]
        return [parent[key] for parent, key in _reach(box, path) if parent[key] is not None]
    except _Mismatch as exc:
        raise NotStructured(
            f"not the {fmt} structure the label describes, or {path.text!r} meets another shape"
        ) from exc
