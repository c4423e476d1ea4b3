"""An upper bound of a thread state's size, found without reading the messages' values.

A message whose postings would take the state of :class:`~guardagent.trace.thread.state.TraceIndex`
over its budget (``max_state_bytes``) is *unindexed*: read again at query time, but no
boundary with it is read (the next message of its source is joined to the one before). The
lookup (:mod:`~guardagent.trace.sources.lookup`) reads every boundary, so it answers as the index
only when no message can be left out: when this bound is within the budget.

The bound follows :meth:`TraceIndex._read <guardagent.trace.thread.state.TraceIndex>`: the state
starts at its size, each new source costs its name and 4 bytes, each message at most
``16 + W`` bytes and each key posted under it at most ``16 + W`` more (W: the digits of the
last index); so the bound is ``16 + W`` per message and per key, the keys counted as:

- a reading (a text as written, and with its escapes read): at most one distinct token per
  two characters of its word form (tokens are runs of word characters, apart), and two
  typed keys per character of its value form (each value's distinct keys, three at most,
  are no more than its span's length, spans do not overlap; the leftover ``@`` tokens do
  not overlap each other). Tighter (:func:`typed_keys`, when the first bound is over the
  budget): three keys per character a typed value must hold, an ASCII digit (the only
  digits the locators read), ``@``, ``.``, ``:`` or a ``localhost`` (values do not overlap,
  so each holds its own), and one per ``@`` for the leftovers;
- a boundary with the previous message of the source: eight keys at most (two joins, each
  one spanning value of three keys at most and one leftover), each posted twice;
- the keys the message's calls write (:func:`~guardagent.trace.thread.state.written_keys`): bounded
  from the arguments' lengths (:func:`written_bound`), or counted when that is over.

Nothing here parses a value: lengths and ``str.count`` over forms the lookup made already.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Sequence
from urllib.parse import unquote

from guardagent.trace.document.shapes import ToolCall, Trace
from guardagent.trace.found.reading import readings
from guardagent.trace.text.normal import normalize_text, reading_form
from guardagent.trace.thread.state import flatten, written_keys

BOUNDARY_KEYS = 8
"""Keys one boundary holds at most (see the module docstring)."""
_TRIGGERS = "0123456789@.:"


def text_keys(words: str, form: str, *, tight: bool = False) -> int:
    """Distinct keys a reading holds at most, from its word and value forms."""
    found = (len(words) + 1) // 2
    if tight:
        return found + 3 * typed_keys(form) + form.count("@")
    return found + 2 * len(form)


def typed_keys(form: str) -> int:
    """Typed values a value form holds at most (each holds a character counted here)."""
    return sum(map(form.count, _TRIGGERS)) + form.count("localhost")


def _reading_keys(text: str, tight: bool) -> int:
    """:func:`text_keys` of a text's readings, as :func:`~guardagent.trace.found.reading._read`."""
    total = 0
    for reading in readings(text):
        words = normalize_text(reading)
        form = words if reading.isascii() else reading_form(reading)
        total += text_keys(words, form, tight=tight)
    return total


def written_bound(call: ToolCall, *, tight: bool = False) -> int:
    """Keys :func:`~guardagent.trace.thread.state.written_keys` holds at most, from lengths.

    A string argument: its keys as free text in each of its three forms (as written,
    URL-decoded, HTML-unescaped), and as an argument value (:func:`read_argument
    <guardagent.trace.found.values.read_argument>`), with n its longest form (as written, NFC,
    words, value form): a whole value's keys (five at most) and tokens (n); or a phrase's
    tokens (n) with the inner values' keys (two per character) and their tokens (n, spans
    apart) and the leftovers (one per character); or the addresses of a list (one per
    ``@``), each with its key and tokens (1 + n). `tight`: the inner values' and leftovers'
    keys counted as :func:`text_keys` counts them. A number: its amount and at most two tokens.
    Anything else: nothing.
    """
    total = 0
    for _, scalar in flatten(call.args):
        if isinstance(scalar, bool) or scalar is None:
            continue
        if isinstance(scalar, int | float):
            total += 3
            continue
        if not isinstance(scalar, str) or not scalar.strip():
            continue
        for form in dict.fromkeys((scalar, unquote(scalar), html.unescape(scalar))):
            total += _reading_keys(form, tight)
        form = reading_form(scalar)
        n = max(
            len(scalar),
            len(normalize_text(scalar)),
            len(form),
            len(unicodedata.normalize("NFC", scalar)),
        )
        keys = 3 * typed_keys(form) + form.count("@") if tight else 2 * n
        inner = keys + n  # the inner values' keys, and their tokens
        total += 9 + n + inner + scalar.count("@") * (1 + n)
    return total


def state_bound(
    trace: Trace,
    size: int,
    pairs: Sequence[tuple[str, str]],
    *,
    tight: bool,
    exact: bool,
    region: str | None,
    year: int | None,
) -> int:
    """The bound (see the module docstring) of the state after reading `trace`.

    Args:
        trace: The thread.
        size: The state's size before its first message.
        pairs: Every message's readings' ``(words, form)``, in order (the lookup's).
        tight: Count the typed keys by the characters they need (else by length).
        exact: Count the written keys (else bound them by :func:`written_bound`).
        region: The phone region (for counting written keys).
        year: The thread's year (likewise).
    """
    per_key = 16 + len(str(len(trace.messages)))
    keys = sum(text_keys(words, form, tight=tight) for words, form in pairs)
    sources: set[str] = set()
    for message in trace.messages:
        if message.source not in sources:
            sources.add(message.source)
            size += len(message.source) + 4
        keys += 2 * BOUNDARY_KEYS
        for call in message.calls:
            keys += (
                len(written_keys(call, region, year)) if exact else written_bound(call, tight=tight)
            )
        size += per_key
    return size + per_key * keys
