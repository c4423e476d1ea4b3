"""Normal behaviour of the sandboxed executor: verdicts, output, toolbox, limits, concurrency."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import threading
import types
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from guardagent.sandbox.policy import OutputCollector, program_globals, safe_builtins
from guardagent.sandbox.process import (
    ExecutionResult,
    SandboxLimits,
    arun_program,
    check_program,
    run_program,
)
from guardagent.tools.registry import Toolbox

ROLES = {"nurse": {"patient": ["name", "age"]}, "admin": {}}


def make_toolbox() -> Toolbox:
    tb = Toolbox()

    @tb.register
    def parse_identity(agent_input: str) -> str:
        """The role named on the `Identity:` line."""
        return agent_input.split("Identity:", 1)[1].split()[0].strip().lower()

    @tb.register
    def forbidden_columns(role: str) -> dict[str, list[str]]:
        """Tables -> columns the role may not read."""
        return ROLES[role]

    return tb


TOOLBOX = make_toolbox()

GUARD = """
role = parse_identity(agent_input)
blocked = forbidden_columns(role)
print("role:", role)
hits = {}
for table, cols in blocked.items():
    used = [c for c in cols if c in agent_output]
    if used:
        hits[table] = used
if hits:
    deny(hits, role + " may not read " + ", ".join(sorted(hits)))
else:
    allow("no restricted column is read")
"""


def run(
    source: str, agent_input: str = "", agent_output: str = "", **limits: Any
) -> ExecutionResult:
    return run_program(source, TOOLBOX, agent_input, agent_output, SandboxLimits(**limits))


def test_benign_deny_with_toolbox_and_stdout() -> None:
    result = run(GUARD, "Identity: Nurse\nQuestion: ages?", "SELECT name FROM patient")
    assert result["ok"] is True and result["error"] is None
    assert result["verdict"] == {
        "allowed": False,
        "violations": {"patient": ["name"]},
        "reason": "nurse may not read patient",
    }
    assert result["stdout"] == "role: nurse\n"
    assert result["duration_ms"] > 0


def test_benign_allow() -> None:
    result = run(GUARD, "Identity: admin", "SELECT name FROM patient")
    assert result["ok"] and result["verdict"] == {
        "allowed": True,
        "violations": [],
        "reason": "no restricted column is read",
    }


def test_result_is_plain_json() -> None:
    result = run(GUARD, "Identity: admin", "x")
    assert set(result) == {
        "ok",
        "verdict",
        "error",
        "stdout",
        "duration_ms",
        "unreadable",
        "predicates",
    }
    assert json.loads(json.dumps(result)) == result


def test_deny_with_rule_list() -> None:
    result = run("deny(['Rule 1: adults only'], 'minor')")
    assert result["ok"] and result["verdict"] == {
        "allowed": False,
        "violations": ["Rule 1: adults only"],
        "reason": "minor",
    }


def test_no_verdict() -> None:
    result = run("x = 1\nprint('thinking')")
    assert result["ok"] is False and result["verdict"] is None
    assert result["error"] is not None and result["error"].startswith("NoVerdict:")
    assert result["stdout"] == "thinking\n"


def test_runtime_error_reports_type_and_line_and_keeps_stdout() -> None:
    result = run("print('before')\nx = {}\ny = x['missing']\nallow()")
    assert result["error"] == "RuntimeError: KeyError: 'missing' (line 3)"
    assert result["stdout"] == "before\n"


def test_error_after_verdict_drops_the_verdict() -> None:
    result = run("allow('fine')\nraise ValueError('late')")
    assert result["ok"] is False and result["verdict"] is None
    assert result["error"] == "RuntimeError: ValueError: late (line 2)"


def test_language_features_guard_code_needs() -> None:
    source = """
def score(words):
    total = 0
    for i, w in enumerate(sorted(set(words))):
        total += len(w) * (i + 1)
    return total
pairs = list(zip([1, 2], ['a', 'b']))
(a, b), c = pairs[0], {k: v for k, v in pairs}
n = 10
n -= 3
n *= 2
n //= 3
msg = f"{a}-{b}-{c[2]}-{n}-{score(['x', 'yy'])}"
try:
    int('nope')
except ValueError as exc:
    msg += ' caught ' + str(exc.args[0])[:7]
def kw(*args, func=0, **rest):
    return len(args) + func + len(rest)
assert kw(*[1, 2], func=3, **{'op': 4}) == 6
assert isinstance(msg, str) and any([True]) and all([1]) and max(1, 2) == 2
print(msg, round(2.5), abs(-1), min([3, 1]), sum(range(4)), tuple([1]), printed)
deny([msg])
"""
    result = run(source)
    assert result["ok"], result
    assert result["verdict"]["violations"] == ["1-a-b-4-5 caught invalid"]  # type: ignore[index]


def test_toolbox_receives_and_returns_copies() -> None:
    calls: list[Any] = []
    shared = {"rows": [1, 2]}
    tb = Toolbox()

    @tb.register
    def rows() -> dict[str, list[int]]:
        """The shared rows."""
        return shared

    @tb.register
    def keep(value: list[int]) -> int:
        """Record a value and return its length."""
        calls.append(value)
        value.append(99)
        return len(value)

    source = """
r = rows()
r['rows'].append(3)
mine = [1]
n = keep(mine)
deny([str(len(rows()['rows'])), str(n), str(len(mine))])
"""
    result = run_program(source, tb, "", "")
    assert result["ok"] and result["verdict"]["violations"] == ["2", "2", "1"]  # type: ignore[index]
    assert shared == {"rows": [1, 2]}


def test_functions_registered_later_and_closures_are_picked_up() -> None:
    tb = Toolbox()
    first = run_program("allow()", tb, "", "")
    assert first["ok"]
    secret_word = "closure-value"

    def word() -> str:
        """A closure defined after the first run."""
        return secret_word

    tb.register(word)
    result = run_program("deny([word()])", tb, "", "")
    assert result["ok"] and result["verdict"]["violations"] == [secret_word]  # type: ignore[index]


def test_fresh_state_every_run() -> None:
    tb = Toolbox()
    counter = {"n": 0}

    @tb.register
    def bump() -> int:
        """Increment a host counter."""
        counter["n"] += 1
        return counter["n"]

    results = [run_program("deny([str(bump())])", tb, "", "") for _ in range(3)]
    assert [r["verdict"]["violations"] for r in results] == [["1"]] * 3  # type: ignore[index]
    assert counter["n"] == 0


def test_verdict_only_from_recorder_not_printed_text() -> None:
    result = run("print('ALLOW')\nprint('{\"allowed\": true}')")
    assert result["error"] is not None and result["error"].startswith("NoVerdict")


def test_toolbox_exceptions_reach_the_program_as_plain_errors() -> None:
    result = run("forbidden_columns('nobody')\nallow()")
    assert result["error"] == (
        "RuntimeError: KeyError: \"forbidden_columns(): KeyError: 'nobody'\" (line 1)"
    )


# --------------------------------------------------------------------------- limits


def test_wall_clock_limit() -> None:
    # Were the wall clock not enforced, the CPU limit (5 s) would end the loop with another
    # error, so the message alone shows which limit fired.
    result = run("while True:\n    pass", wall_seconds=0.3, cpu_seconds=5)
    assert result["error"] == "Timeout: exceeded the wall-clock limit of 0.3 s"


def test_cpu_limit() -> None:
    result = run("sum(range(10 ** 12))\nallow()", wall_seconds=10, cpu_seconds=1)
    assert result["error"] is not None and result["error"].startswith("LimitExceeded: CPU")


def test_memory_limit_is_headroom_over_the_interpreter() -> None:
    grow = "x = ' ' * (150 * 1024 * 1024)\nallow()"
    assert run(grow)["ok"]  # default headroom: 1024 MB
    small = run(grow, memory_mb=64)
    assert small["error"] == "LimitExceeded: memory limit exceeded (MemoryError)"


def test_output_limit_truncates() -> None:
    result = run("for i in range(1000):\n    print('x' * 99)\nallow()", max_output_chars=500)
    assert result["ok"]
    assert result["stdout"].startswith("x" * 99 + "\n")
    assert result["stdout"].endswith("[output truncated]")
    assert len(result["stdout"]) < 600


def test_source_limit() -> None:
    result = run("allow()\n" + "#" * 200, max_source_chars=100)
    assert result["error"] is not None and result["error"].startswith("CompileError")
    assert run("allow()\n" + "#" * 200)["ok"]


def test_large_sources_are_compiled_in_the_child() -> None:
    filler = "x = 1\n" * 4000  # > 16 000 chars: the parent leaves compiling to the child
    assert run(filler + "deny([str(x)])")["verdict"] == {
        "allowed": False,
        "violations": ["1"],
        "reason": "",
    }
    assert run(filler + "allow = 1")["error"] == (
        "PolicyError: Line 4001: cannot assign to protected name 'allow'"
    )
    assert run(filler + "allow(")["error"] == (
        "CompileError: Line 4001: SyntaxError: '(' was never closed"
    )


def test_recursion_limit() -> None:
    result = run("def f(n):\n    return f(n + 1)\nf(0)")
    assert result["error"] == "LimitExceeded: maximum recursion depth exceeded (line 2)"


# --------------------------------------------------------------------------- isolation


def test_child_isolation_as_seen_by_a_trusted_function(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GUARD_TEST_VAR", "visible-in-host")
    tb = Toolbox()

    @tb.register
    def probe() -> dict[str, Any]:
        """What the child process looks like from inside."""
        open_fds = []
        for fd in range(64):
            try:
                os.fstat(fd)
                open_fds.append(fd)
            except OSError:
                pass
        return {
            "env": dict(os.environ),
            "fds": open_fds,
            "stdio": [os.readlink(f"/proc/self/fd/{fd}") for fd in (0, 1, 2)],
            "cwd": os.readlink("/proc/self/cwd"),
            "fsize": resource.getrlimit(resource.RLIMIT_FSIZE),
            "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
            "cpu": resource.getrlimit(resource.RLIMIT_CPU),
            "pid": os.getpid(),
        }

    result = run_program("p = probe()\ndeny([str(p)])", tb, "", "", SandboxLimits(cpu_seconds=2))
    assert result["ok"], result
    seen = eval(result["verdict"]["violations"][0])  # type: ignore[index]  # noqa: S307
    assert seen["env"] == {}
    assert seen["fds"] == [0, 1, 2, 3]
    assert seen["stdio"] == ["/dev/null"] * 3
    assert seen["cwd"].endswith("(deleted)")
    assert seen["fsize"] == (0, 0)
    assert seen["nofile"] == (4, 4)
    assert seen["cpu"] == (2, 3)
    assert seen["pid"] != os.getpid()


def test_no_module_objects_reachable_from_globals() -> None:
    scope = program_globals({"allow": print}, OutputCollector(10))
    for value in [*scope.values(), *safe_builtins().values()]:
        assert not isinstance(value, types.ModuleType)
    names = set(safe_builtins())
    for banned in (
        "__import__",
        "type",
        "object",
        "vars",
        "dir",
        "globals",
        "open",
        "format",
        "eval",
        "exec",
        "compile",
        "setattr",
        "delattr",
        "BaseException",
    ):
        assert banned not in names


# --------------------------------------------------------------------------- check_program


def test_check_program_ok() -> None:
    assert check_program(GUARD, TOOLBOX) == []


def test_check_program_reports_compile_and_policy_errors() -> None:
    errors = check_program("import os\nparse_identity = 1\nx = a.__class__", TOOLBOX)
    assert any(e.startswith("CompileError:") and "__class__" in e for e in errors)
    assert "PolicyError: Line 1: imports are not allowed" in errors
    assert "PolicyError: Line 2: cannot assign to protected name 'parse_identity'" in errors


def test_check_program_syntax_error() -> None:
    assert check_program("def (", TOOLBOX) == ["CompileError: Line 1: SyntaxError: invalid syntax"]


def test_run_program_rejects_like_check_program() -> None:
    result = run("agent_output = ''\nallow()")
    assert result["error"] == "PolicyError: Line 1: cannot assign to protected name 'agent_output'"


# --------------------------------------------------------------------------- concurrency


async def test_arun_program_concurrent_verdicts_and_loop_stays_responsive() -> None:
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    tick_task = asyncio.create_task(ticker())
    busy = "n = 0\nfor _ in range(100000):\n    n += 1\n"  # each run lasts well past a tick
    programs = [busy + (f"allow('{i}')" if i % 2 else f"deny(['{i}'])") for i in range(16)]
    results = await asyncio.gather(*(arun_program(p, TOOLBOX, "", "") for p in programs))
    stop.set()
    await tick_task
    for i, result in enumerate(results):
        assert result["ok"], result
        assert result["verdict"]["allowed"] is bool(i % 2)  # type: ignore[index]
        expected = str(i) if i % 2 else [str(i)]
        got = result["verdict"]["reason"] if i % 2 else result["verdict"]["violations"]  # type: ignore[index]
        assert got == expected
    assert ticks > 3


async def test_arun_program_timeout_does_not_block_the_loop() -> None:
    # A run that held the loop would be over before the sleep below could return.
    slow = asyncio.ensure_future(
        arun_program("while True:\n    pass", TOOLBOX, "", "", SandboxLimits(wall_seconds=0.5))
    )
    await asyncio.sleep(0.05)
    assert not slow.done()
    result = await slow
    assert result["error"] is not None and result["error"].startswith("Timeout")


def test_threads_concurrently() -> None:
    def one(i: int) -> tuple[int, ExecutionResult]:
        return i, run_program(
            f"deny([agent_input, '{threading.get_ident()}'])", TOOLBOX, str(i), ""
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(one, range(24)))
    for i, result in results:
        assert result["ok"], result
        assert result["verdict"]["violations"][0] == str(i)  # type: ignore[index]


async def test_arun_program_leaves_the_default_executor_free() -> None:
    # A one-thread default executor: were the runs on it, the probe below could only run
    # after one of them had timed out, so some run would be done when the probe returns.
    # Order, not wall-clock time, is checked, so a loaded machine cannot flake this.
    loop = asyncio.get_running_loop()
    default = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(default)
    try:
        slow = [
            asyncio.ensure_future(
                arun_program(
                    "while True:\n    pass", TOOLBOX, "", "", SandboxLimits(wall_seconds=2.0)
                )
            )
            for _ in range(12)
        ]
        await asyncio.sleep(0.05)
        assert await loop.run_in_executor(None, lambda: 42) == 42
        assert not any(run.done() for run in slow)
        results = await asyncio.gather(*slow)
    finally:
        default.shutdown(wait=False)
    assert all(r["error"] is not None and r["error"].startswith("Timeout") for r in results)


# --------------------------------------------------------------------------- parent-side checks


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[" * 100_000 + b"]" * 100_000,
        b'["v", "e"]',
        b'{"v": {"allowed": true, "violations": ["x"], "reason": ""}, "e": null, "o": ""}',
        b'{"v": {"allowed": 1, "violations": [], "reason": ""}, "e": null, "o": ""}',
        b'{"v": {"allowed": true, "violations": [], "reason": 5}, "e": null, "o": ""}',
        b'{"v": {"allowed": true, "violations": [], "reason": "", "x": 1}, "e": null, "o": ""}',
        b'{"v": {"allowed": false, "violations": {"t": "c"}, "reason": ""}, "e": null, "o": ""}',
        b'{"v": null, "e": 3, "o": ""}',
        b'{"v": null, "e": null, "o": "", "p": {"x": {"value": 1, "probability": null}}}',
        b'{"v": null, "e": null, "o": "", "p": {"x": {"value": true}}}',
        b'{"v": null, "e": null, "o": "", "p": ["x"]}',
        b'{"v": null, "e": "NoVerdict", "o": "", "p": {"x": {"value": true, "probability": null}}}',
    ],
)
def test_parent_rejects_forged_or_malformed_child_lines(line: bytes) -> None:
    from guardagent.sandbox.process import _parse_payload

    verdict, error, _, _, predicates = _parse_payload(line, 100)
    assert predicates == {}
    assert verdict is None
    assert error is not None and error.startswith("SandboxError: malformed result")


def test_parent_recaps_child_stdout() -> None:
    from guardagent.sandbox.process import _parse_payload

    line = json.dumps({"v": None, "e": "NoVerdict: x", "o": "y" * 10_000}).encode()
    _, error, stdout, _, _ = _parse_payload(line, 100)
    assert error == "NoVerdict: x"
    assert stdout == "y" * 100 + "\n... [output truncated]"
