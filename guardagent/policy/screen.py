"""Screen a policy file's YAML before it is composed: plain data only, bounded nesting.

A policy file is data a deployer (or a tool writing on their behalf) hands to the guard. The
safe loader already refuses to *build* Python objects, but it reports a ``!!python`` tag as
an exception from deep inside the loader, and it composes nested collections recursively, so
a file nested thousands deep raises ``RecursionError``. Reading the file's events first (the
YAML parser is a state machine, not recursive) turns both into a problem with a position,
which the loader reports as a :class:`~guardagent.policy.model.PolicyError`.

The events come from the parser that composes the file afterwards (LibYAML's, when PyYAML
has it: `guardagent.policy.reading`), so the screen reads what the loader will read, ~10x
faster than PyYAML's pure-Python parser (4 ms of a trace profile's first decision). A file
LibYAML refuses (invalid, or nested past its own limit of 1,000) is screened again by
PyYAML's parser, which names the problem as before.
"""

from __future__ import annotations

import yaml

MAX_NESTING = 64
"""Collections nested deeper than this are refused (no policy needs more than a few)."""

_PLAIN_TAGS = frozenset(
    "tag:yaml.org,2002:" + name
    for name in (
        "str",
        "int",
        "float",
        "bool",
        "null",
        "seq",
        "map",
        "timestamp",
        "binary",
        "set",
        "omap",
        "pairs",
        "merge",
        "value",
    )
)
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the composer's (reading.py)


def screen_yaml(text: str) -> tuple[str, int, int] | None:
    """The first construct a policy file may not use, as ``(problem, line, column)``.

    Args:
        text: The YAML text.

    Returns:
        None when the file is plain data nested at most :data:`MAX_NESTING` deep (or is
        not valid YAML: the loader reports that with its own position).
    """
    try:
        return _screen(text, _LOADER)
    except yaml.YAMLError:  # PyYAML's own parser explains a file LibYAML refuses (rare)
        try:
            return _screen(text, yaml.SafeLoader)
        except yaml.YAMLError:
            return None


def _screen(text: str, loader_class: type) -> tuple[str, int, int] | None:
    loader = loader_class(text)
    depth = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            mark = event.start_mark
            tag = getattr(event, "tag", None)
            if tag not in (None, "!") and tag not in _PLAIN_TAGS:
                return (
                    f"the tag {str(tag)[:80]!r} is not allowed (a policy is plain data)",
                    mark.line + 1,
                    mark.column + 1,
                )
            if isinstance(event, _OPEN):
                depth += 1
                if depth > MAX_NESTING:
                    return (
                        f"collections are nested more than {MAX_NESTING} deep",
                        mark.line + 1,
                        mark.column + 1,
                    )
            elif isinstance(event, _CLOSE):
                depth -= 1
    finally:
        loader.dispose()
    return None
