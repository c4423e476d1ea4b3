r"""Lone surrogates out of what the guard hands back: decisions and thread states.

A Python string may hold a surrogate code point (U+D800..U+DFFF) on its own: a JSON text
decoded from ``"\ud800"``, a tool result read from undecodable bytes (``surrogateescape``).
No UTF-8 encoder takes one: ``model_dump_json`` raised on a decision that quoted such a
result, and a thread state holding one (a message's tail, kept to read the next boundary)
could not be checkpointed (msgpack, UTF-8 JSON) and the thread could not go on.

What leaves the guard is therefore written with each lone surrogate replaced by U+FFFD
(the replacement character, what a UTF-8 decoder writes for bytes it cannot read); a pair
of surrogates (an astral character written as UTF-16 halves) is joined into its character.
The replacement is lossy on purpose: the guard's *reading* of the trace is unchanged, only
its answer is written in text every encoder accepts, and a state is signed as written, so
the next call reads back exactly what was stored.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")  # one character class: linear


def text_without_surrogates(text: str) -> str:
    """`text`, surrogate pairs joined and lone surrogates as U+FFFD (itself when none)."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    # UTF-16 with surrogatepass writes each code point's halves as they are; decoding joins
    # a valid pair into its character and replaces each lone half
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def without_surrogates(value: Any) -> Any:
    """JSON-like data (dicts, lists, tuples, strings) with :func:`text_without_surrogates`.

    Keys and values alike; other objects are returned as they are. Data with no lone
    surrogate is returned unchanged (the same objects), so the common case copies nothing.
    """
    if isinstance(value, str):
        return text_without_surrogates(value)
    if isinstance(value, dict):
        items = [(without_surrogates(k), without_surrogates(v)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, list | tuple):
        items = [without_surrogates(v) for v in value]
        if all(v is v0 for v, v0 in zip(items, value, strict=True)):
            return value
        return type(value)(items) if type(value) in (list, tuple) else items
    return value
