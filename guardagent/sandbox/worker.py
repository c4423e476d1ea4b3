"""The warm worker: one isolated sandbox process that runs many trusted programs, one at a time.

Forking a process per run costs milliseconds; a verified decision's program runs in well under
one. Programs the deployment shipped and programs that verified on the profile's
demonstrations run here instead: a process forked once by the zygote, isolated exactly like a
one-run child (:func:`~guardagent.sandbox.child.isolate_process`: empty environment, its
result socket as the only descriptor, an empty deleted working directory, address-space,
file-size, descriptor and process limits) that then serves requests on that socket.

Nothing of one run reaches the next: each run gets fresh globals, builtins, recorders and
print buffer (:func:`~guardagent.sandbox.policy.prepare_program`), runs in an empty
`contextvars.Context` (no ledger entry or user facts of the last run), and sees toolbox data
only as deep copies (:func:`~guardagent.sandbox.policy.copying_tool`), so mutating what a tool
returned changes no cache behind it. The process itself is retired: after `max_runs` runs, when
its CPU budget could not cover another full run, after a run that hit a limit or failed
inside the sandbox machinery, and by the caller on a wall-clock timeout (SIGKILL). A run's
cyclic garbage (a list holding itself) is collected after its answer is sent, so it never
counts against the next run's memory limit; what the worker inherited is frozen out of
those collections (`gc.freeze`: its pages stay shared with the zygote).

CPU: RLIMIT_CPU counts the whole process, so before each run the soft limit is set to the CPU
used so far plus the run's `cpu_seconds` (SIGXCPU kills the worker at it), under a hard limit
of a few runs' worth that the worker retires before reaching.

Protocol on the socket: the caller sends one request line
`{"tools", "source", "input", "output", "facts"}` (`tools`: the built-in toolbox's references,
so one worker serves every built-in profile); the worker answers one result line in the one-run
child's format (`{"v", "e", "o", "u", "p"}`), plus `"w": 1` when it retires after it.
"""

from __future__ import annotations

import contextvars
import gc
import json
import math
import os
import resource
import signal
from collections.abc import Callable
from typing import Any, NoReturn

from guardagent.readers.user_facts import bind_host_facts, normalize_facts
from guardagent.sandbox import child
from guardagent.sandbox.policy import compile_program, prepare_program
from guardagent.tools.registry import Toolbox

MAX_RUNS = 500  # runs per worker before it is replaced
CPU_RUNS = 4  # the worker's lifetime CPU: this many runs at the per-run limit (then retire)
_MAX_LINE = 64 * 1024 * 1024
_FD = 3
_MEMORY_LINE = b'{"e": "LimitExceeded: memory limit exceeded while reporting", "w": 1}\n'


def worker_rlimits(limits: child.SandboxLimits) -> list[tuple[int, int, int]]:
    """A one-run child's limits, but a lifetime CPU hard limit the per-run soft one moves under."""
    out = []
    for which, soft, hard in child.rlimits_for(limits):
        if which == resource.RLIMIT_CPU:
            inherited = resource.getrlimit(which)[1]
            most = CPU_RUNS * limits.cpu_seconds + 1
            hard = most if inherited == resource.RLIM_INFINITY else min(most, inherited)
            soft = min(limits.cpu_seconds, hard)
        out.append((which, soft, hard))
    return out


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _read_request(buf: bytearray) -> bytes | None:
    """The next request line from the socket (None at EOF or an oversized line)."""
    while True:
        end = buf.find(b"\n")
        if end >= 0:
            line = bytes(buf[:end])
            del buf[: end + 1]
            return line
        if len(buf) > _MAX_LINE:
            return None
        chunk = os.read(_FD, 1 << 20)
        if not chunk:
            return None
        buf += chunk


def _run_one(
    raw: bytes, toolbox_of: Callable[[Any], Toolbox], limits: child.SandboxLimits
) -> dict[str, Any]:
    """One request: its toolbox, compile (cached), fresh globals, run in an empty context."""
    req = json.loads(raw)
    toolbox = toolbox_of(req["tools"])
    source, agent_input, agent_output = req["source"], req["input"], req["output"]
    if not all(type(x) is str for x in (source, agent_input, agent_output)):
        raise ValueError("source, input and output must be strings")
    if len(source) > limits.max_source_chars:
        raise ValueError(f"source longer than {limits.max_source_chars} chars")
    facts = req.get("facts")
    facts = None if facts is None else normalize_facts(facts)
    protected = child._protected_names(toolbox)
    compiled = compile_program(source, protected)
    if compiled.code is None:
        return {"v": None, "e": compiled.rejection(), "o": ""}
    program = prepare_program(
        compiled.code, toolbox, agent_input, agent_output, limits.max_output_chars
    )

    def body() -> dict[str, Any]:
        bind_host_facts(facts)
        return program.execute()

    return contextvars.Context().run(body)


def _retire_after(
    payload: dict[str, Any], runs: int, limits: child.SandboxLimits, hard_cpu: int
) -> bool:
    error = payload.get("e") or ""
    if runs >= MAX_RUNS or error.startswith(("LimitExceeded", "SandboxError")):
        return True
    return math.ceil(_cpu_used()) + limits.cpu_seconds > hard_cpu - 1


def serve_worker(
    conn_fd: int, toolbox_of: Callable[[Any], Toolbox], limits: child.SandboxLimits
) -> NoReturn:
    """Worker body (forked by the zygote after it announced our pid): isolate, then serve.

    `toolbox_of` turns a request's toolbox references into the toolbox (built-in functions
    only, resolved by the zygote's rules), so one worker serves every built-in profile.
    """
    status = 0
    try:
        signals = [s for s in child.RESET_SIGNALS if callable(signal.getsignal(s))]
        rlimits = worker_rlimits(limits)
        hard_cpu = next(h for w, _, h in rlimits if w == resource.RLIMIT_CPU)
        child.isolate_process(
            signals, rlimits, child.environ_block(), child.empty_cwd_fd(), conn_fd
        )
        gc.freeze()  # what the zygote shared is never walked (copied) by the collections below
        buf, runs = bytearray(), 0
        while True:
            raw = _read_request(buf)
            if raw is None:
                break
            resource.setrlimit(
                resource.RLIMIT_CPU,
                (min(math.ceil(_cpu_used()) + limits.cpu_seconds, hard_cpu), hard_cpu),
            )
            runs += 1
            try:
                payload = _run_one(raw, toolbox_of, limits)
            except MemoryError:
                payload = {"v": None, "e": "LimitExceeded: memory limit exceeded", "o": ""}
            except Exception as exc:  # noqa: BLE001 - a malformed request: answer, retire
                payload = {
                    "v": None,
                    "e": f"SandboxError: bad worker request ({exc})"[:400],
                    "o": "",
                }
            retire = _retire_after(payload, runs, limits, hard_cpu)
            if retire:
                payload["w"] = 1
            line = json.dumps(payload).encode() + b"\n"
            if len(line) > child._MAX_PAYLOAD:
                line = b'{"e": "LimitExceeded: verdict or output too large to report", "w": 1}\n'
                retire = True
            child._write_all(line)
            if retire:
                break
            gc.collect()  # this run's cycles, after its answer: never the next run's memory
    except MemoryError:
        try:
            child._write_all(_MEMORY_LINE)
        except BaseException:  # noqa: BLE001 - nothing more to say
            status = 70
    except BaseException:  # noqa: BLE001 - the caller reads the death from the zygote
        status = 70
    os._exit(status)
