"""The process keeps message readings by content: bounded, keyed by all they depend on, inert.

A hit must give exactly what reading the text again gives (region and year are part of the
key), callers cannot change an entry, the cache stays within its bound, and a reading the
budget interrupts stores nothing.
"""

from __future__ import annotations

import pytest

from guardagent.readers.evidence import UnreadableEvidence
from guardagent.trace import TraceIndex, parse_trace
from guardagent.trace.document.shapes import ToolCall
from guardagent.trace.found import reading as R
from guardagent.trace.text.budget import reading_budget
from guardagent.trace.thread.state import call_keys, text_keys, written_keys
from tests.reference.old_index import old_text_keys
from tests.traces.synthetic import proposed, thread


@pytest.fixture(autouse=True)
def _fresh_caches() -> None:
    R.TEXTS.clear()
    R.BOUNDARIES.clear()


def test_a_reading_is_kept_per_region() -> None:
    text = "call 044 668 18 00 or +41 44 668 18 00"
    swiss = text_keys(text, "CH", 2024)
    assert text_keys(text, None, 2024) == old_text_keys(text, None, 2024) != swiss
    assert text_keys(text, "CH", 2024) == swiss == old_text_keys(text, "CH", 2024)
    assert "phone:+41446681800" in swiss


def test_a_reading_is_kept_per_year() -> None:
    text = "the rent is due june 13"
    assert "date:2024-06-13" in text_keys(text, None, 2024)
    assert "date:2025-06-13" in text_keys(text, None, 2025)
    assert "date:2024-06-13" not in text_keys(text, None, 2025)


def test_callers_cannot_change_an_entry() -> None:
    text = "pay DE89 3704 0044 0532 0130 00 now"
    keys = text_keys(text, None, 2024)
    keys.add("iban:FORGED")
    keys.discard("iban:DE89370400440532013000")
    again = text_keys(text, None, 2024)
    assert "iban:FORGED" not in again and "iban:DE89370400440532013000" in again
    reading = R.message_reading(text, None, 2024)
    with pytest.raises(TypeError):
        reading.hashed["iban:FORGED"] = "x"  # type: ignore[index]


def test_the_cache_stays_within_its_bound() -> None:
    cache = R.ReadingCache(max_bytes=40_000)
    for i in range(200):
        text = f"message {i} from bob{i}@example.org about item {i}"
        cache.put((text, "", None, 2024), R.Reading.of(text_keys(text, None, 2024)))
        assert cache.size <= cache.max_bytes
    assert 0 < len(cache.entries) < 200
    newest = "message 199 from bob199@example.org about item 199"
    assert cache.get((newest, "", None, 2024)) is not None, "least recently used out first"
    assert cache.get(("message 0 from bob0@example.org about item 0", "", None, 2024)) is None
    big = " ".join(f"w{i}" for i in range(5_000))
    cache.put((big, "", None, 2024), R.Reading.of(text_keys(big, None, 2024)))
    assert (big, "", None, 2024) not in cache.entries, "an entry above a sixteenth is not kept"


def test_a_reading_the_budget_stops_stores_nothing() -> None:
    text = "1 " * 2_000  # more candidates than one budget check apart
    with pytest.raises(UnreadableEvidence), reading_budget(0.0):
        text_keys(text, None, 2024)
    assert not R.TEXTS.entries
    assert text_keys(text, None, 2024) == old_text_keys(text, None, 2024)


def test_call_readings_tell_argument_types_apart() -> None:
    def call(value: object) -> ToolCall:
        return ToolCall(id="c", name="t", args={"x": value}, index=0)

    one, text_one, true = call(1), call("1"), call(True)
    assert call_keys(true, None, 2024) == set(), "a boolean is nothing to trace"
    assert call_keys(one, None, 2024) == {"amount:1", "w:1"}, "True == 1, but not its reading"
    assert call_keys(text_one, None, 2024) >= {"w:1"}
    written = written_keys(text_one, None, 2024)
    written.add("forged")
    assert "forged" not in written_keys(text_one, None, 2024)


def test_an_index_built_from_kept_readings_equals_a_cold_one() -> None:
    first, second = thread(60, seed=5), thread(60, seed=6)
    traces = [parse_trace(m, proposed(m)) for m in (first, second, first)]
    cold = TraceIndex("CH")
    cold.update(traces[0])
    TraceIndex("CH").update(traces[1])  # another thread read in between
    warm = TraceIndex("CH")
    warm.update(traces[2])
    assert R.TEXTS.hits > 0
    assert warm.to_json() == cold.to_json()


def test_threads_share_the_cache_safely() -> None:
    """Guards run in threads: concurrent reads and evictions keep the cache whole."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [
        f"thread {i}: pay DE89 3704 0044 0532 0130 00 to bob{i}@example.org on may {i % 28 + 1}"
        for i in range(300)
    ]
    expected = {t: old_text_keys(t, "CH", 2024) for t in texts}
    bound = R.TEXTS.max_bytes
    R.TEXTS.max_bytes = 30_000  # constant eviction
    try:
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda t: (t, text_keys(t, "CH", 2024)), texts * 4))
    finally:
        R.TEXTS.max_bytes = bound
    assert all(keys == expected[t] for t, keys in results)
    assert R.TEXTS.size == sum(w for _, w in R.TEXTS.entries.values()) <= 30_000


def test_key_hashes_in_one_go_equal_one_at_a_time() -> None:
    """The batch encoding (nine bytes, twelve base64 characters) keeps the stored form."""
    import base64
    import hashlib

    def stored(key: str) -> str:
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")

    keys = [
        "",
        "w:a",
        "w:\ud800x",
        "email:bob@x.org",
        "w:straße",
        "x" * 5000,
        *(f"w:{i}" for i in range(500)),
    ]
    R._HASHES.clear()
    assert R._hashed(keys) == {k: stored(k) for k in keys}
    assert all(R.key_hash(k) == stored(k) for k in keys)
