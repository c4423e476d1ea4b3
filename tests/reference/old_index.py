"""``TraceIndex._read`` as it was before the reader's speed-up (frozen, for differential tests).

See :mod:`tests.reference.old_locate`. Only the reading differs from :class:`TraceIndex`: the
old locator, the old key sets and the old boundary reading (both joins read in full).
"""

from __future__ import annotations

import html
from urllib.parse import unquote

from guardagent.trace.document.shapes import Message, ToolCall, Trace
from guardagent.trace.text.normal import normalize_text, reading_form, tokens
from guardagent.trace.thread.state import (
    WINDOW,
    TraceIndex,
    _short,
    call_keys,
    flatten,
    key_hash,
    readings,
)
from tests.reference.old_locate import extract_values


def old_text_keys(text: str, region: str | None, year: int | None = None) -> set[str]:
    keys: set[str] = set()
    for reading in readings(text):
        keys.update("w:" + t for t in tokens(normalize_text(reading)))
        for found in extract_values(reading_form(reading), region=region, year=year):
            keys.update(found.value.keys)
            keys.update(k for _, k in found.value.parts)
    return keys


def old_written_keys(call: ToolCall, region: str | None, year: int | None = None) -> set[str]:
    keys = call_keys(call, region, year)
    for _, scalar in flatten(call.args):
        if not isinstance(scalar, str) or not scalar.strip():
            continue
        for form in dict.fromkeys((scalar, unquote(scalar), html.unescape(scalar))):
            keys |= old_text_keys(form, region, year)
    return keys


def old_echo_of(
    message: Message, trace: Trace, region: str | None, year: int | None = None
) -> set[str]:
    if message.role != "tool":
        return set()
    call = trace.call_of(message)
    return call_keys(call, region, year) if call is not None else set()


class OldIndex(TraceIndex):
    """A :class:`TraceIndex` that reads messages the old way."""

    def _read(self, message: Message, trace: Trace) -> None:
        self.work.messages_read += 1
        self.work.chars_read += len(message.text)
        normalized = reading_form(readings(message.text)[-1])
        echo = old_echo_of(message, trace, self.region, self.year)
        keys = old_text_keys(message.text, self.region, self.year) - echo
        self.hashes.append(_short(message.digest))
        self.sources.append(self._source_id(message.source))
        self._size += 16 + len(str(len(self.sources)))
        crossing = self._old_crossing(message, normalized) - echo
        for call in message.calls:
            for key in old_written_keys(call, self.region, self.year):
                h = key_hash(key)
                if h not in self.written:
                    self.written[h] = message.index
                    self._size += 16 + len(str(message.index))
        hashed = {key_hash(k) for k in keys}
        digits = len(str(message.index)) + 1
        cost = digits * len(hashed) + 16 * sum(h not in self.postings for h in hashed)
        if self._size + cost > self.max_state_bytes:
            self.unindexed.append(message.index)
            self._size += len(str(message.index)) + 1
            return
        for h in hashed:
            self._old_post(h, message.index)
        prev = self.tails.get(message.source)
        if prev is not None:
            for key in crossing:
                h = key_hash(key)
                self._old_post(h, prev[0])
                self._old_post(h, message.index)
        self.tails[message.source] = (message.index, normalized[-WINDOW:])

    def _old_post(self, h: str, index: int) -> None:
        from bisect import bisect_left

        ids = self.postings.get(h)
        if ids is None:
            self.postings[h] = [index]
            self._size += 16 + len(str(index))
            return
        if ids[-1] < index:
            ids.append(index)
            self._size += 1 + len(str(index))
            return
        at = bisect_left(ids, index)
        if at == len(ids) or ids[at] != index:
            ids.insert(at, index)
            self._size += 1 + len(str(index))

    def _old_crossing(self, message: Message, normalized: str) -> set[str]:
        prev = self.tails.get(message.source)
        if prev is None or not normalized or message.source == "model":
            return set()
        tail, head = prev[1], normalized[:WINDOW]
        keys: set[str] = set()
        joins = ("",) if tail[-1:].isspace() or head[:1].isspace() else ("", " ")
        for sep in joins:
            joined = tail + sep + head
            cut = len(tail)
            for found in extract_values(
                joined, region=self.region, year=self.year, across=(cut, cut + len(sep))
            ):
                keys.update(found.value.keys)
                keys.update(k for _, k in found.value.parts)
        return keys
