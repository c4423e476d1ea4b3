"""Trace decisions at the floor (issue 38): their lines, and long conversations.

Issue 38's targets for trace decisions, each a ratio to the p50 of a 5-node LangGraph
``invoke`` measured in the same run (:func:`print_traces`, :func:`print_long`):

- with the thread's state, at 100 messages: p50 <= 1.4x the invoke (:data:`WITH_STATE`);
- long conversations without a checkpointer (item 1), below.

A host that keeps no thread state sends the whole conversation at every call, and the guard
reads all of it. The reading must stay linear with a small constant: the target is a
stateless decision's p99 <= 10x the p50 of a 5-node LangGraph ``invoke`` (measured in the
same run) per 10,000 characters of trace.

The traces are synthetic (never benchmark data): multi-tool turns of the assistant thread of
:mod:`tests.traces.synthetic` (its vocabulary, addresses, IBANs, phone numbers, amounts,
dates and links), with one to three calls a turn and results of one to twelve records, built
until the thread's JSON reaches 10k, 30k or 100k characters. Each timed decision is a thread
the process never saw (its own seed; every kept reading dropped before the clock), the call
a ``send_email`` to the address of the user's last request (allowed, like the floor rows).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

from guardagent import GuardAgent
from guardagent.agent import settle_heap
from tests.traces.synthetic import _TOOLS, _result, _sentence, _vocabulary, thread

SIZES = (10_000, 30_000, 100_000)
"""Trace sizes measured (characters of the thread's JSON)."""
TARGET = 10.0
"""p99 per 10k characters at most this many 5-node invoke p50s."""
WITH_STATE = 1.4
"""A decision with thread state at 100 messages: p50 at most this many invoke p50s."""


def long_thread(chars: int, seed: int) -> list[dict[str, Any]]:
    """An OpenAI-format multi-tool thread of at least `chars` characters of JSON.

    Each turn: a user request naming an address, an assistant message with one to three
    tool calls, their results (one to twelve records each), and a short model reply.
    """
    rnd = random.Random(seed)
    vocab = _vocabulary(rnd, 1500)
    people = [f"{rnd.choice(vocab)}.{rnd.choice(vocab)}" for _ in range(50)]
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are Dana's assistant."}]
    size, turn = len(json.dumps(out)), 0
    while size < chars:
        turn += 1
        picked = rnd.sample(_TOOLS, rnd.randint(1, 3))
        new: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": (
                    f"Please check {picked[0][0].replace('_', ' ')} about "
                    f"{rnd.choice(vocab)} and tell "
                    f"{rnd.choice(people)}@example.org."
                ),
            }
        ]
        ids = [f"call_{turn}_{k}" for k in range(len(picked))]
        new.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": t, "arguments": json.dumps(a)},
                    }
                    for i, (t, a) in zip(ids, picked, strict=True)
                ],
            }
        )
        most = max(1, (chars - size) // (400 * len(picked)))  # the last turns stay small
        for i, (tool, _) in zip(ids, picked, strict=True):
            records = [
                _result(rnd, vocab, tool, people) for _ in range(min(most, rnd.randint(1, 12)))
            ]
            new.append({"role": "tool", "tool_call_id": i, "content": "\n\n".join(records)})
        new.append({"role": "assistant", "content": _sentence(rnd, vocab, rnd.randint(5, 15))})
        out.extend(new)
        size += len(json.dumps(new))
    return out


def user_call(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A send_email to the address of the user's last request (allowed)."""
    last = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    return {
        "name": "send_email",
        "args": {
            "to": last.split()[-1].rstrip("."),
            "subject": "Update",
            "body": "Done, see you soon.",
        },
    }


def pct(values: list[float], q: float) -> float:
    """The `q` quantile (nearest rank) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def long_decisions(
    guard: Any, runs: int, invoke: Callable[[], float], sizes: tuple[int, ...] = SIZES
) -> dict[str, dict[str, float]]:
    """Stateless decisions on never-seen long threads: p50 / p99 ms, and per 10k characters.

    `invoke` gives the 5-node invoke p50, measured right before each size's row (the load of
    a shared machine moves within a run). Below 100 runs the p99 is the slowest run: one
    hiccup of a shared machine decides it.
    """
    from guardagent.trace.document.resume import forget
    from guardagent.trace.found.reading import clear_caches

    out: dict[str, dict[str, float]] = {}
    for size in sizes:
        n = runs
        threads = [long_thread(size, seed=7_000_000 + size + i) for i in range(n)]
        chars = sum(len(json.dumps(t)) for t in threads) / n
        guard.check_trace(threads[0], user_call(threads[0]))  # the code paths warm
        floor = invoke()
        ms, allowed = [], 0
        for messages in threads:
            call = user_call(messages)
            forget()
            clear_caches()
            start = time.perf_counter()
            allowed += guard.check_trace(messages, call).allowed
            ms.append((time.perf_counter() - start) * 1000)
        per = 10_000 / chars
        out[f"{size // 1000}k"] = {
            "chars": round(chars),
            "messages": round(sum(map(len, threads)) / n),
            "p50": round(pct(ms, 0.5), 2),
            "p99": round(pct(ms, 0.99), 2),
            "p50_per_10k": round(pct(ms, 0.5) * per, 3),
            "p99_per_10k": round(pct(ms, 0.99) * per, 3),
            "invoke": round(floor, 3),
            "allowed": allowed / n,
        }
    return out


def long_rows(runs: int, mem: str, invoke: Callable[[], float]) -> dict[str, dict[str, float]]:
    """Stateless decisions on long synthetic threads (:func:`long_decisions`), warmed up.

    `invoke` gives the 5-node invoke p50 (``bench_floor.invoke_p50``). After the warm-up the
    process's heap is settled as :meth:`GuardAgent.warm_up` leaves a guard process
    (:func:`guardagent.agent.settle_heap`, ``gc.freeze``): without it, one full collection
    over the whole process (LangGraph, pydantic, z3: ~200k objects; 120-150 ms on the shared
    VM) in about 50 decisions at 100k characters decides the p99.
    """
    guard = GuardAgent("assistant-trace", memory_dir=mem, trace_key="bench-floor key")
    for seed in range(3):  # every reader's first use (imports, tables) before the clock
        warm = thread(100, seed=seed)
        guard.check_trace(warm, user_call(warm))
        long = long_thread(30_000, seed=seed)  # lazily loaded tables (a region, a country)
        guard.check_trace(long, user_call(long))
    settle_heap()
    return long_decisions(guard, max(10, runs // 2), invoke)


def print_long(rows: dict[str, dict[str, float]]) -> None:
    """One line a size: p50 / p99, per 10k characters, and the ratio to the invoke p50."""
    for name, r in rows.items():
        ratio = r["p99_per_10k"] / r["invoke"]
        verdict = "PASS" if ratio <= TARGET else "MISS"
        print(
            f"stateless long trace {name:>4} ({r['chars']} chars, {r['messages']} messages): "
            f"p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms; per 10k chars p50 "
            f"{r['p50_per_10k']:.2f} ms, p99 {r['p99_per_10k']:.2f} ms = {ratio:.1f}x the "
            f"invoke p50 {r['invoke']:.3f} ms (<= {TARGET:.0f}x: {verdict}); "
            f"allowed {r['allowed']:.0%}"
        )


def print_traces(traces: dict[str, float], invoke: float) -> None:
    """The 100-message trace decisions' line (``bench_floor.trace_decisions``).

    The issue-22 targets in ms (2 ms with state, 5 ms without), and issue 38's with-state
    one as a ratio to `invoke`, the 5-node invoke p50 measured beside them.
    """
    ok = {True: "met", False: "NOT met"}
    ratio = traces["with_state_p50"] / invoke
    verdict = "PASS" if ratio <= WITH_STATE else "MISS"
    print(
        f"trace decision at 100 messages: p50 {traces['with_state_p50']:.2f} ms with thread "
        f"state = {ratio:.2f}x the invoke p50 {invoke:.3f} ms (<= {WITH_STATE}x: {verdict}; "
        f"<= 2 ms: {ok[traces['with_state_p50'] <= 2]}; "
        f"{traces['with_state_cold_p50']:.2f} ms in a process that did not serve the "
        "thread's previous call); without state "
        f"{traces['without_state_p50']:.2f} ms cold, a thread never seen (<= 5 ms: "
        f"{ok[traces['without_state_p50'] <= 5]}), {traces['without_state_warm_p50']:.2f} ms "
        f"warm, its previous step seen (<= 5 ms: {ok[traces['without_state_warm_p50'] <= 5]}), "
        f"{traces['without_state_repeat_p50']:.2f} ms the same thread again"
    )
