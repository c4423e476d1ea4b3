"""Text functions guard programs call: linear-time regular expressions and safe formatting.

Why these exist: the sandbox offers no `re` (a backtracking engine lets one pattern take
exponential time on attacker-chosen text) and refuses the `format` attribute (a format
string walks attributes: `"{0.__class__}".format(x)`). Here the same jobs are done safely:

- `re_search`, `re_fullmatch`, `re_findall` use RE2 (`google-re2`), whose matching time is
  linear in the text and which has no backreferences or look-around. Pattern and text sizes
  are bounded and every failure is a `ValueError` that says what to change.
- `format_text` accepts only plain fields (`{}`, `{0}`, `{name}`), no attribute or index
  access, conversions `!s` / `!r` only, bounded widths, and arguments that are plain
  `str` / `int` / `float` / `bool` / `None`, checked with :class:`string.Formatter` before
  anything is formatted.

None of them is a reader: their parameters are not named `agent_input` / `agent_output`, so
the data-flow rule (:mod:`guardagent.sandbox.dataflow`) refuses a program that passes them
the raw event. A program searches what a reader returned.
"""

from __future__ import annotations

import string
from typing import Any

import re2

MAX_PATTERN_CHARS = 2_000
"""Longest pattern accepted."""
MAX_TEXT_CHARS = 4_000_000
"""Longest text searched (a 1 MB tool result fits with room to spare)."""
MAX_MATCHES = 10_000
"""Most matches `re_findall` returns before it refuses (a program should narrow its pattern)."""
MAX_TEMPLATE_CHARS = 10_000
"""Longest `format_text` template."""
MAX_FIELDS = 100
"""Most replacement fields in one template."""
MAX_FORMATTED_CHARS = 1_000_000
"""Longest `format_text` result."""
_MAX_SPEC_DIGITS = 3  # widths and precisions up to 999
_RE2_MEMORY = 8 << 20  # RE2's per-pattern memory budget (its default), bytes
_PLAIN = (str, int, float, bool, type(None))


def _regex(caller: str, pattern: Any, text: Any, ignore_case: Any) -> Any:
    """The compiled RE2 pattern, after checking the arguments' types and sizes."""
    if not isinstance(pattern, str) or not isinstance(text, str):
        raise TypeError(
            f"{caller}: pattern and text must be strings, got "
            f"{type(pattern).__name__} and {type(text).__name__}"
        )
    if not isinstance(ignore_case, bool):
        raise TypeError(f"{caller}: ignore_case must be True or False")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"{caller}: the pattern has {len(pattern)} characters; at most "
            f"{MAX_PATTERN_CHARS} are allowed"
        )
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(
            f"{caller}: the text has {len(text)} characters; at most {MAX_TEXT_CHARS} are searched"
        )
    options = re2.Options()
    options.log_errors = False  # the error is raised to the program, not printed
    options.max_mem = _RE2_MEMORY
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ValueError(
            f"{caller}: {pattern!r} is not an RE2 pattern ({detail}); RE2 has no "
            r"backreferences (\1) and no look-around ((?=...), (?<=...)), and writes "
            r"Python's \Z as \z"
        ) from None


def _groups(match: Any) -> list[str]:
    return [match.group(0), *(g if g is not None else "" for g in match.groups())]


def re_search(pattern: str, text: str, ignore_case: bool = False) -> list[str] | None:
    """The first match of an RE2 pattern anywhere in `text`, or None.

    RE2 runs in time linear in the text; it has no backreferences and no look-around.
    Pass a reader's result, never the raw event.

    Returns:
        [whole match, group 1, group 2, ...] (a group that did not take part is ""), or
        None when nothing matches.
    """
    match = _regex("re_search", pattern, text, ignore_case).search(text)
    return None if match is None else _groups(match)


def re_fullmatch(pattern: str, text: str, ignore_case: bool = False) -> list[str] | None:
    """Like `re_search`, but the pattern must match the whole of `text`; None otherwise."""
    match = _regex("re_fullmatch", pattern, text, ignore_case).fullmatch(text)
    return None if match is None else _groups(match)


def re_findall(pattern: str, text: str, ignore_case: bool = False) -> list[str] | list[list[str]]:
    """Every non-overlapping match of an RE2 pattern in `text`, like Python's `re.findall`.

    Returns:
        The whole matches when the pattern has no group, group 1 of each match when it has
        one, [group 1, group 2, ...] per match when it has several. More than 10,000
        matches is an error (narrow the pattern).
    """
    regex = _regex("re_findall", pattern, text, ignore_case)
    found: list[Any] = []
    for match in regex.finditer(text):
        if len(found) == MAX_MATCHES:
            raise ValueError(f"re_findall: more than {MAX_MATCHES} matches; narrow the pattern")
        groups = _groups(match)
        found.append(
            groups[0] if len(groups) == 1 else groups[1] if len(groups) == 2 else groups[1:]
        )
    return found


def _check_spec(spec: str, field: str) -> None:
    """A format spec without nested fields and with widths/precisions below 1000."""
    if "{" in spec or "}" in spec:
        raise ValueError(f"format_text: field {{{field}:{spec}}} nests a field in its format")
    run = 0
    for char in spec:
        run = run + 1 if char.isdigit() else 0
        if run > _MAX_SPEC_DIGITS:
            raise ValueError(
                f"format_text: field {{{field}:{spec}}}: widths and precisions must be below 1000"
            )


def _check_template(template: str) -> int:
    """Refuse anything but plain fields; return the number of fields."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"format_text: the template does not parse ({exc}); write a "
            "literal brace as {{ or }}"
        ) from None
    fields = 0
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        fields += 1
        if name and not (name.isdigit() or name.isidentifier()):
            raise ValueError(
                f"format_text: field {{{name}}} is not allowed: only {{}}, "
                "{0} or {name}, with no attribute or index access"
            )
        if conversion not in (None, "s", "r"):
            raise ValueError(
                f"format_text: conversion !{conversion} is not allowed (only !s and !r)"
            )
        _check_spec(spec or "", name)
    if fields > MAX_FIELDS:
        raise ValueError(f"format_text: {fields} fields; at most {MAX_FIELDS} are allowed")
    return fields


def format_text(template: str, *args: Any, **kwargs: Any) -> str:
    """`template.format(*args, **kwargs)` for plain fields only (the sandbox has no `.format`).

    Fields are `{}`, `{0}` or `{name}`, optionally with `!s` / `!r` and a simple format
    spec (`{:.2f}`, `{:>10}`); attribute or index access (`{0.x}`, `{0[1]}`) and nested
    fields are refused. Arguments must be str, int, float, bool or None.
    Example: `format_text("transfer of {amount:.2f} to {to}", amount=25, to="ACME")`.
    """
    if not isinstance(template, str):
        raise TypeError(
            f"format_text: the template must be a string, not {type(template).__name__}"
        )
    if len(template) > MAX_TEMPLATE_CHARS:
        raise ValueError(
            f"format_text: the template has {len(template)} characters; at most "
            f"{MAX_TEMPLATE_CHARS} are allowed"
        )
    for where, value in [*enumerate(args), *kwargs.items()]:
        if type(value) not in _PLAIN:  # exact types: a subclass could bring its own __format__
            raise TypeError(
                f"format_text: argument {where!r} is a {type(value).__name__}; "
                "only str, int, float, bool and None can be formatted"
            )
    _check_template(template)
    try:
        text = template.format(*args, **kwargs)
    except KeyError as exc:
        raise ValueError(f"format_text: no argument for field {exc.args[0]!r}") from None
    except IndexError as exc:
        raise ValueError(f"format_text: a positional field has no argument ({exc})") from None
    except ValueError as exc:
        raise ValueError(f"format_text: {exc}") from None
    if len(text) > MAX_FORMATTED_CHARS:
        raise ValueError(
            f"format_text: the result has {len(text)} characters; at most "
            f"{MAX_FORMATTED_CHARS} are allowed"
        )
    return text
