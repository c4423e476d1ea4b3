"""The warm worker: trusted programs share a process, never state; a bad run replaces it."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import pytest

from guardagent.nodes import execute as execute_node
from guardagent.nodes.state import GuardState
from guardagent.profiles import load_profile
from guardagent.sandbox import warm
from guardagent.sandbox.process import ExecutionResult, SandboxLimits, run_program

TOOLBOX = load_profile("mind2web-sc").tools()
INPUT = "Task: x\nUser information:\n   age: 30,\n   membership: False"
LIMITS = SandboxLimits(wall_seconds=2.0, cpu_seconds=1, memory_mb=256)


def run(
    program: str,
    *,
    trusted: bool = True,
    facts: dict[str, Any] | None = None,
    limits: SandboxLimits = LIMITS,
) -> ExecutionResult:
    return run_program(program, TOOLBOX, INPUT, "out", limits, user_facts=facts, trusted=trusted)


def pids() -> set[int]:
    """Pids of the idle warm workers of this process."""
    return {w.pid for workers in warm._idle.values() for w in workers}


def violations(result: ExecutionResult) -> list[str]:
    assert result["ok"], result
    assert result["verdict"] is not None
    return result["verdict"]["violations"]


@pytest.fixture(autouse=True)
def no_idle_workers() -> None:
    """Each test starts with no idle worker, so the pids it sees are its own."""
    with warm._lock:
        for workers in warm._idle.values():
            for worker in workers:
                worker.sock.close()
        warm._idle.clear()


def test_trusted_runs_share_one_worker() -> None:
    first = violations(run('deny(["a"])'))
    (pid,) = pids()
    for _ in range(5):
        assert violations(run('deny(["b"])')) == ["b"]
    assert pids() == {pid} and first == ["a"]


def test_untrusted_programs_never_reach_a_worker() -> None:
    assert violations(run('deny(["a"])', trusted=False)) == ["a"]
    assert pids() == set()


# Each pair: the first run plants state where a reused process could keep it, the second
# (in the same worker) reports what it sees. "clean" means nothing of the first run remained.
PLANTS = {
    "global": (
        "leak = 'planted'\nallow()",
        "try:\n    leak\n    deny(['planted'])\nexcept NameError:\n    deny(['clean'])",
    ),
    "tool_result": (
        "u = parse_user_info(agent_input)\nu['age'] = 99\nu['x'] = 1\nallow()",
        "u = parse_user_info(agent_input)\n"
        "deny(['clean' if u['age'] == 30 and 'x' not in u else 'planted'])",
    ),
    "builtin": (
        "len = lambda x: 'planted'\nallow()",
        "deny(['clean' if len('ab') == 2 else 'planted'])",
    ),
    "printed": (
        "print('planted')\nallow()",
        "deny(['clean' if 'planted' not in printed else 'planted'])",
    ),
    "default_argument": (
        "def f(a=[]):\n    a.append(1)\n    return a\nf()\nf()\nallow()",
        "def f(a=[]):\n    a.append(1)\n    return a\ndeny(['clean' if f() == [1] else 'planted'])",
    ),
}


@pytest.mark.parametrize("name", sorted(PLANTS))
def test_state_planted_in_one_run_is_not_seen_by_the_next(name: str) -> None:
    plant, probe = PLANTS[name]
    assert run(plant)["ok"]
    (pid,) = pids()
    assert violations(run(probe)) == ["clean"]
    assert pids() == {pid}  # the probe ran in the planting process


def test_user_facts_of_one_run_are_not_the_next_runs() -> None:
    probe = "deny([str(parse_user_info(agent_input)['age'])])"
    assert violations(run(probe, facts={"age": 12})) == ["12"]
    assert violations(run(probe)) == ["30"]  # read from the input's text again
    assert len(pids()) == 1


def test_a_failed_verdict_call_does_not_carry_over() -> None:
    assert not run("allow()\nallow()")["ok"]
    assert violations(run('deny(["next"])')) == ["next"]


@pytest.mark.parametrize(
    ("program", "kinds"),
    [
        ("while True:\n    pass", ("Timeout", "LimitExceeded")),
        ("x = 'a' * (10 ** 9)\nallow()", ("LimitExceeded",)),
        ("deny(['x' * 10 ** 8])", ("LimitExceeded",)),
    ],
    ids=["timeout", "memory", "oversize"],
)
def test_a_worker_that_hit_a_limit_is_replaced(program: str, kinds: tuple[str, ...]) -> None:
    assert run('deny(["a"])')["ok"]
    (before,) = pids()
    result = run(program)
    assert not result["ok"] and (result["error"] or "").split(":")[0] in kinds, result
    assert before not in pids()
    assert violations(run('deny(["b"])')) == ["b"]
    assert before not in pids()
    with pytest.raises(ProcessLookupError):  # killed or exited, and reaped by the zygote
        for _ in range(100):
            os.kill(before, 0)
            time.sleep(0.02)


def test_a_worker_that_died_idle_is_not_reused() -> None:
    assert run('deny(["a"])')["ok"]
    (before,) = pids()
    os.kill(before, signal.SIGKILL)
    time.sleep(0.2)  # the zygote reaps it and reports on its connection
    assert violations(run('deny(["b"])')) == ["b"]
    assert before not in pids()


def test_a_worker_is_replaced_after_a_bounded_number_of_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(warm, "MAX_RUNS", 3)
    seen = []
    for _ in range(7):
        assert run('deny(["a"])')["ok"]
        seen.append(next(iter(pids()), 0))
    assert seen[0] == seen[1] and seen[2] == 0  # retired after its third run
    assert seen[3] == seen[4] != seen[0]


def test_a_crash_of_the_worker_is_a_denial() -> None:
    """A CPU limit hit inside a C loop kills the worker: reported, then replaced."""
    result = run("x = sum(range(10 ** 10))\nallow()")
    assert not result["ok"] and result["verdict"] is None
    assert (result["error"] or "").split(":")[0] in ("LimitExceeded", "Timeout"), result
    assert pids() == set()


@pytest.mark.parametrize(("source", "trusted"), [("memory", True), ("generated", False)])
def test_execute_trusts_only_verified_programs(
    source: str, trusted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[bool] = []

    def fake(*args: Any, trusted: bool = False, **kwargs: Any) -> ExecutionResult:
        seen.append(trusted)
        return ExecutionResult(
            ok=False,
            verdict=None,
            error="x",
            stdout="",
            duration_ms=0.0,
            unreadable=[],
            predicates={},
        )

    monkeypatch.setattr(execute_node, "run_program", fake)
    monkeypatch.setattr(execute_node, "check_dataflow", lambda *_: [])
    monkeypatch.setattr(execute_node, "context_of", lambda _: _Ctx())
    monkeypatch.setattr(execute_node, "profile_of", lambda _: load_profile("mind2web-sc"))
    monkeypatch.setattr(execute_node, "limits_of", lambda _: LIMITS)
    state = GuardState(agent_input="a", agent_output="b", program="allow()", program_source=source)  # type: ignore[typeddict-item]
    execute_node.execute(state, None)  # type: ignore[arg-type]
    assert seen == [trusted]


class _Ctx:
    user_facts = None


def test_one_worker_serves_every_built_in_toolbox_and_each_run_sees_only_its_own() -> None:
    ehr = load_profile("eicu-ac").tools()
    assert violations(run('deny(["a"])')) == ["a"]
    (pid,) = pids()
    other = run_program(
        "deny([parse_identity('Identity: nursing')])", ehr, "i", "o", LIMITS, trusted=True
    )
    assert violations(other) == ["nursing"] and pids() == {pid}
    leaked = run("deny([parse_identity('Identity: nursing')])")  # not in mind2web-sc's toolbox
    assert not leaked["ok"] and "parse_identity" in (leaked["error"] or ""), leaked


def test_workers_of_a_replaced_zygote_are_let_go(monkeypatch: pytest.MonkeyPatch) -> None:
    from guardagent.sandbox import zygote

    assert run('deny(["a"])')["ok"]
    (old,) = pids()
    with zygote._lock:  # as set_limit_maxima does: the next run starts a new zygote
        zygote._current[0].stop()  # the workers' zygote (niceness 0)
    assert violations(run('deny(["b"])')) == ["b"]
    assert old not in pids()
    with pytest.raises(ProcessLookupError):  # it read EOF and exited
        for _ in range(100):
            os.kill(old, 0)
            time.sleep(0.02)


def test_warm_up_starts_a_worker_the_first_event_uses(tmp_path: Any) -> None:
    from guardagent import GuardAgent

    guard = GuardAgent("mind2web-sc", memory_dir=str(tmp_path))
    guard.warm_up()
    (pid,) = pids()
    guard.warm_up()  # one is idle already: nothing more is started
    assert pids() == {pid}
    guard.check(INPUT, "(Final Answer)\nELEMENT: A\n\nACTION: CLICK\n\nVALUE: None")
    assert pids() == {pid}


def test_warm_up_keeps_what_is_alive_out_of_later_collections(tmp_path: Any) -> None:
    import gc
    import weakref

    from guardagent import GuardAgent

    guard = GuardAgent("mind2web-sc", memory_dir=str(tmp_path))
    gc.unfreeze()
    try:
        guard.warm_up()
        assert gc.get_freeze_count() > 10_000  # the imports, the compiled graph, the profile

        class Node:
            other: Any = None

        first, second = Node(), Node()
        first.other, second.other = second, first  # a cycle made after warm_up
        ref = weakref.ref(first)
        del first, second
        gc.collect()
        assert ref() is None  # garbage made later is still collected
    finally:
        gc.unfreeze()


def test_a_worker_started_ahead_in_a_fresh_process_is_kept_for_its_first_run() -> None:
    """`warm_up()` starts a worker before the process ever took one: it must be the worker
    the first trusted run gets (it was closed at once, and the first run paid a start)."""
    import subprocess
    import sys

    script = (
        "from dataclasses import asdict\n"
        "from guardagent.profiles import load_profile\n"
        "from guardagent.sandbox import warm, zygote\n"
        "from guardagent.sandbox.process import SandboxLimits, prestart_worker, run_program\n"
        "tools = load_profile('mind2web-sc').tools()\n"
        "assert prestart_worker(tools, SandboxLimits())\n"
        "[idle] = [w for ws in warm._idle.values() for w in ws]\n"
        "result = run_program(\"deny(['x'])\", tools, '', '', trusted=True)\n"
        "assert result['ok'], result\n"
        "[after] = [w for ws in warm._idle.values() for w in ws]\n"
        "print(idle.pid == after.pid)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert out.stdout.strip() == "True", out.stderr[-2000:]


@pytest.mark.parametrize(
    "garbage",
    [
        "x = [0] * 12000000\nx.append(x)",
        "x = {'k': [0] * 12000000}\nx['self'] = x",
        "a = [0] * 6000000\nb = [a, 0] * 3000000\na.append(b)",
    ],
)
def test_one_runs_cyclic_garbage_does_not_fail_the_next_run(garbage: str) -> None:
    """Seen failing before the fix: the third run of a program leaving ~100 MB of cycles
    behind hit the worker's memory limit (nothing collected them between runs)."""
    results = [run(garbage + '\ndeny(["a"])') for _ in range(4)]
    assert [violations(r) for r in results] == [["a"]] * 4
    assert len(pids()) == 1  # one worker served them all: none was retired for memory
