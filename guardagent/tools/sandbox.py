"""Run LLM-generated guard programs in a forked, rlimited child process.

Two independent layers: RestrictedPython (:mod:`guardagent.tools.restricted`) limits what
the code can name, and a fresh child process per run limits what it can do if that layer
fails: empty environment, no file descriptors but the result pipe, an empty working
directory, CPU/address-space/file-size/descriptor limits and a parent-side SIGKILL at the
wall-clock deadline. Every run gets a freshly forked child (never a reused worker), so no
state survives a run. Toolboxes of registered built-ins are forked by a small pre-warmed
zygote (:mod:`guardagent.tools.zygote`), which is cheaper than forking a guard process with
LangGraph and Chroma loaded; any other toolbox is forked from the caller, so functions
registered at any time, closures in `__main__` included, run with the caller's state. Only
one JSON line crosses back; nothing is unpickled.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import os
import resource
import select
import signal
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import CodeType
from typing import Any, NoReturn

from typing_extensions import TypedDict

from guardagent.tools.registry import Toolbox
from guardagent.tools.restricted import (
    INPUT_NAMES,
    TRUNCATED_MARK,
    PreparedProgram,
    compile_program,
    prepare_program,
)
from guardagent.tools.verdict import VERDICT_NAMES, Verdict, VerdictError, VerdictRecorder
from guardagent.tools.zygote import run_in_zygote, toolbox_refs

__all__ = ["ExecutionResult", "SandboxLimits", "arun_program", "check_program", "run_program"]

_RESULT_FD = 3
_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536
_MAX_PAYLOAD = 4 * 1024 * 1024  # verdict + stdout + error, bytes of JSON
_MAX_ERROR_CHARS = 4000
# RestrictedPython's transformer is pure Python: a hostile 100 kB source can take seconds
# to compile. Up to this size the parent compiles (and caches); above it, the child does,
# under the CPU and wall-clock limits.
_PARENT_COMPILE_CHARS = 16_000
_MEMORY_LINE = b'{"e": "LimitExceeded: memory limit exceeded while reporting"}\n'
_FAILED_LINE = b'{"e": "SandboxError: the child failed before reporting"}\n'
_RESET_SIGNALS = tuple(
    int(s)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGHUP, signal.SIGUSR1,
              signal.SIGUSR2, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXCPU, signal.SIGXFSZ)
)  # fmt: skip
_SIGNAL_ERRORS: dict[int, str] = {
    signal.SIGXCPU.value: "LimitExceeded: CPU time limit exceeded",
    signal.SIGXFSZ.value: "LimitExceeded: file size limit exceeded",
    signal.SIGKILL.value: "LimitExceeded: killed (CPU or memory limit)",
}


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits for one run.

    Attributes:
        wall_seconds: Parent-side deadline; the child is SIGKILLed when it passes.
        cpu_seconds: RLIMIT_CPU of the child (catches C-level loops a signal cannot stop).
        memory_mb: Address space the program may add on top of what the forked
            interpreter already maps (RLIMIT_AS = current size + this). An absolute cap
            would be meaningless: with chromadb (a live client) and langgraph loaded the
            parent already maps ~650 MB (measured) before it runs anything.
        max_output_chars: Printed text kept for the debugger; the rest is dropped.
        max_source_chars: Longer programs are rejected before parsing (parser bombs).

    """

    wall_seconds: float = 5.0
    cpu_seconds: int = 5
    memory_mb: int = 1024
    max_output_chars: int = 20_000
    max_source_chars: int = 100_000


class ExecutionResult(TypedDict):
    """What one run produced; plain JSON-able data.

    `verdict` is only set when `ok` is True, so a caller that forgets to check `ok` still
    cannot read an allow out of a failed run.
    """

    ok: bool
    verdict: Verdict | None
    error: str | None
    stdout: str
    duration_ms: float


# --------------------------------------------------------------------------- compile


def _protected_names(toolbox: Toolbox) -> frozenset[str]:
    return toolbox.names | VERDICT_NAMES | INPUT_NAMES


def check_program(source: str, toolbox: Toolbox) -> list[str]:
    """Compile and policy errors of `source`, each `"<Kind>: text"`; [] when runnable.

    Args:
        source: The guard program.
        toolbox: The functions it will be given (their names may not be rebound).

    """
    if type(source) is not str:
        return ["CompileError: source must be a str"]
    if len(source) > SandboxLimits.max_source_chars:
        return [f"CompileError: source longer than {SandboxLimits.max_source_chars} chars"]
    return compile_program(source, _protected_names(toolbox)).messages()


# --------------------------------------------------------------------------- child side


@dataclass
class _Run:
    """One run, built fresh in the parent just before the fork.

    Building it before the fork keeps allocation out of the child, where every touched
    page is a copy-on-write fault (~4 us each on these VMs); the parent drops its copy.
    """

    program: PreparedProgram
    rlimits: list[tuple[int, int, int]]
    signals: list[int]
    source: str | None  # set when the child must compile (large sources)
    protected: frozenset[str]


def prepare_run(
    code: CodeType | None, source: str, toolbox: Toolbox, inputs: tuple[str, str],
    limits: SandboxLimits,
) -> _Run:  # fmt: skip
    """The program's fresh globals plus the child's limits and signals to reset."""
    program = prepare_program(code, toolbox, inputs[0], inputs[1], limits.max_output_chars)
    signals = [s for s in _RESET_SIGNALS if callable(signal.getsignal(s))]
    protected = _protected_names(toolbox)
    return _Run(program, _rlimits(limits), signals, None if code else source, protected)


def _compile_and_execute(run: _Run) -> dict[str, Any]:
    """In the child: compile first if the parent left that to us, then run."""
    if run.source is not None:
        compiled = compile_program(run.source, run.protected)
        if compiled.code is None:
            return {"v": None, "e": compiled.rejection(), "o": ""}
        run.program.code = compiled.code
    return run.program.execute()


def _rlimits(limits: SandboxLimits) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) for the child, never above the inherited hard limits."""
    with open("/proc/self/statm", "rb") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    cpu = max(1, limits.cpu_seconds)
    wanted = [
        (resource.RLIMIT_AS, mapped + limits.memory_mb * 1024 * 1024, 0),
        (resource.RLIMIT_CPU, cpu, 1),  # soft: SIGXCPU; hard one second later: SIGKILL
        (resource.RLIMIT_FSIZE, 0, 0),
        (resource.RLIMIT_CORE, 0, 0),
        (resource.RLIMIT_NPROC, 0, 0),
        (resource.RLIMIT_NOFILE, _RESULT_FD + 1, 0),
    ]
    out = []
    for which, soft, extra in wanted:
        hard = resource.getrlimit(which)[1]
        cap = soft + extra if hard == resource.RLIM_INFINITY else min(soft + extra, hard)
        out.append((which, min(soft, cap), cap))
    return out


def _isolate(run: _Run, cwd_fd: int, write_fd: int) -> None:
    """Strip the child down: signals, cwd, descriptors, environment, rlimits."""
    for sig in run.signals:  # only Python-level handlers: the program must not trigger them
        signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    os.fchdir(cwd_fd)
    if write_fd != _RESULT_FD:
        os.dup2(write_fd, _RESULT_FD)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    os.closerange(_RESULT_FD + 1, _MAX_FD)
    os.environ.clear()
    gc.disable()  # a full collection would touch (copy) every page shared with the parent
    for which, soft, hard in run.rlimits:
        resource.setrlimit(which, (soft, hard))


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(_RESULT_FD, view) :]


def _child(run: _Run, cwd_fd: int, write_fd: int) -> NoReturn:
    """Body of the forked child: isolate, run, write one JSON line, `os._exit`."""
    status = 0
    try:
        _isolate(run, cwd_fd, write_fd)
        line = json.dumps(_compile_and_execute(run)).encode() + b"\n"
        if len(line) > _MAX_PAYLOAD:
            line = b'{"e": "LimitExceeded: verdict or output too large to report"}\n'
        _write_all(line)
    except MemoryError:
        with contextlib.suppress(BaseException):
            _write_all(_MEMORY_LINE)
    except BaseException:
        status = 70
        with contextlib.suppress(BaseException):
            _write_all(_FAILED_LINE)
    finally:
        os._exit(status)


def child_main(run: _Run, write_fd: int) -> NoReturn:
    """Child body for a process that forked elsewhere (the zygote): same isolation."""
    _child(run, empty_cwd_fd(), write_fd)


# --------------------------------------------------------------------------- parent side

_zombies: set[int] = set()
_lock = threading.Lock()
_cwd: list[int] = []
_pool: list[ThreadPoolExecutor] = []


def empty_cwd_fd() -> int:
    """A descriptor of an empty directory that has already been deleted.

    Children `fchdir` into it: nothing can be created in a removed directory, not even by
    root, and there is nothing to clean up after a killed child.
    """
    with _lock:
        if not _cwd:
            path = tempfile.mkdtemp(prefix="guard-sandbox-")
            _cwd.append(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            os.rmdir(path)
        return _cwd[0]


def _reap_later(pid: int) -> None:
    """Kill and reap `pid` without waiting for its (slow, large) address-space teardown."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with _lock:
        _zombies.add(pid)
        pending = list(_zombies)
    for child in pending:
        try:
            done, _ = os.waitpid(child, os.WNOHANG)
        except ChildProcessError:
            done = child
        if done:
            with _lock:
                _zombies.discard(child)


def _read_line(fd: int, deadline: float) -> tuple[str, bytes]:
    """Wait for the child's JSON line: ("line", data), ("eof"|"timeout"|"oversize", b"")."""
    buf = bytearray()
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout", b""
        if not poller.poll(max(1, int(remaining * 1000))):
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return "eof", b""
        buf += chunk
        end = buf.find(b"\n")
        if end >= 0:
            return "line", bytes(buf[:end])
        if len(buf) > _MAX_PAYLOAD:
            return "oversize", b""


def _wait(pid: int) -> int | None:
    """Exit status of `pid`; None if someone else (a `waitpid(-1)` watcher) reaped it."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return None


def _death_error(status: int | None) -> str:
    """Explain a child that died without reporting."""
    if status is None:
        return "SandboxError: the child exited without a result"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        default = f"SandboxError: child killed by signal {signal.Signals(sig).name}"
        return _SIGNAL_ERRORS.get(sig, default)
    return f"SandboxError: child exited with status {os.waitstatus_to_exitcode(status)}"


def _parse_payload(line: bytes, max_output: int) -> tuple[Verdict | None, str | None, str]:
    """Validate the child's line as data (the child is not trusted); caps re-applied here."""
    try:
        payload = json.loads(line)
        verdict, error, stdout = payload.get("v"), payload.get("e"), payload.get("o", "")
        if not (isinstance(error, str | None) and isinstance(stdout, str)):
            raise ValueError("bad field types")
        if len(stdout) > max_output + len(TRUNCATED_MARK):
            stdout = stdout[:max_output] + TRUNCATED_MARK
        return _revalidate(verdict), error and error[:_MAX_ERROR_CHARS], stdout
    except (ValueError, TypeError, AttributeError, RecursionError, VerdictError) as exc:
        return None, f"SandboxError: malformed result from child ({exc})", ""


def _revalidate(raw: Any) -> Verdict | None:
    """Rebuild the verdict through a fresh recorder so its shape is exactly the contract."""
    if raw is None:
        return None
    if type(raw) is not dict or set(raw) != {"allowed", "violations", "reason"}:
        raise ValueError("bad verdict")
    recorder = VerdictRecorder()
    if raw["allowed"] is True and raw["violations"] == []:
        recorder.allow(raw["reason"])
    elif raw["allowed"] is False:
        recorder.deny(raw["violations"], raw["reason"])
    else:
        raise ValueError("bad verdict")
    return recorder.verdict


def _fork_run(
    code: CodeType | None, source: str, toolbox: Toolbox, inputs: tuple[str, str],
    limits: SandboxLimits,
) -> tuple[Verdict | None, str | None, str]:  # fmt: skip
    """Fork one child for one run and turn whatever happens into (verdict, error, stdout)."""
    run = prepare_run(code, source, toolbox, inputs, limits)
    cwd_fd = empty_cwd_fd()
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child; reported through the pipe
            _child(run, cwd_fd, write_fd)
        os.close(write_fd)
        write_fd = -1
        del run
        outcome, line = _read_line(read_fd, time.monotonic() + limits.wall_seconds)
        if outcome == "line":
            _reap_later(pid)
            return _ended(outcome, line, None, limits)
        if outcome != "eof":
            os.kill(pid, signal.SIGKILL)
        return _ended(outcome, line, _wait(pid), limits)
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)


def _result(
    start: float, verdict: Verdict | None, error: str | None, stdout: str = ""
) -> ExecutionResult:
    ok = error is None and verdict is not None
    return ExecutionResult(
        ok=ok,
        verdict=verdict if ok else None,
        error=error,
        stdout=stdout,
        duration_ms=(time.perf_counter() - start) * 1000,
    )


def run_program(
    source: str,
    toolbox: Toolbox,
    agent_input: str,
    agent_output: str,
    limits: SandboxLimits | None = None,
) -> ExecutionResult:
    """Run a guard program in a fresh child process and return its single verdict.

    Never raises for a bad program: compile/policy rejections, runtime errors, missing or
    duplicate verdicts, limit kills and sandbox failures all come back with `ok=False`.
    Safe to call from several threads at once.

    Args:
        source: The guard program (RestrictedPython subset).
        toolbox: Trusted functions bound as globals; registered functions are picked up
            by fork, so closures and `__main__` functions work.
        agent_input: Bound as `agent_input`.
        agent_output: Bound as `agent_output`.
        limits: Resource limits; defaults to `SandboxLimits()`.

    """
    start = time.perf_counter()
    limits = limits or SandboxLimits()
    if type(agent_input) is not str or type(agent_output) is not str:
        return _result(start, None, "SandboxError: agent_input and agent_output must be str")
    if type(source) is not str or len(source) > limits.max_source_chars:
        return _result(start, None, f"CompileError: source must be a str of at most "
                       f"{limits.max_source_chars} chars")  # fmt: skip
    code, rejection = compile_for_run(source, toolbox)
    if rejection is not None:
        return _result(start, None, rejection)
    inputs = (agent_input, agent_output)
    try:
        refs = toolbox_refs(toolbox) if _zygote_enabled() else None
        try:
            if refs is not None:
                return _result(start, *_zygote_run(source, refs, inputs, limits))
        except Exception:  # noqa: BLE001 - no usable zygote (could not start, died, ...):
            pass  # fork the caller instead, which is just as isolated
        verdict, error, stdout = _fork_run(code, source, toolbox, inputs, limits)
    except OSError as exc:
        return _result(start, None, f"SandboxError: {type(exc).__name__}: {exc}")
    return _result(start, verdict, error, stdout)


def compile_for_run(source: str, toolbox: Toolbox) -> tuple[CodeType | None, str | None]:
    """(code, None) to run, (None, rejection) to refuse, or (None, None): compile in the child.

    Small sources compile here (and are cached); large ones compile in the child, under its
    CPU and wall-clock limits, because RestrictedPython may take seconds on a hostile one.
    """
    if len(source) > _PARENT_COMPILE_CHARS:
        return None, None
    compiled = compile_program(source, _protected_names(toolbox))
    return compiled.code, (compiled.rejection() if compiled.code is None else None)


def _zygote_enabled() -> bool:
    return os.environ.get("GUARDAGENT_SANDBOX_ZYGOTE", "1") != "0"


def _zygote_run(
    source: str, refs: list[list[str]], inputs: tuple[str, str], limits: SandboxLimits
) -> tuple[Verdict | None, str | None, str]:
    """One run in a child of the pre-warmed zygote (cheap fork); same outcomes as a fork."""
    outcome, value = run_in_zygote(source, refs, inputs, limits)
    if outcome == "status":
        return _ended("eof", b"", value, limits)
    return _ended(outcome, value or b"", None, limits)


def _ended(
    outcome: str, line: bytes, status: int | None, limits: SandboxLimits
) -> tuple[Verdict | None, str | None, str]:
    """How a child ended, as (verdict, error, stdout): one reading for both fork paths."""
    if outcome == "line":
        return _parse_payload(line, limits.max_output_chars)
    if outcome == "timeout":
        return None, f"Timeout: exceeded the wall-clock limit of {limits.wall_seconds} s", ""
    if outcome == "oversize":
        return None, "LimitExceeded: result too large", ""
    return None, _death_error(status), ""


async def arun_program(
    source: str,
    toolbox: Toolbox,
    agent_input: str,
    agent_output: str,
    limits: SandboxLimits | None = None,
) -> ExecutionResult:
    """:func:`run_program` on a worker thread, so the event loop never waits on a child.

    The threads are the sandbox's own pool, not the loop's default executor: a burst of
    slow programs (each up to `wall_seconds`) must not starve unrelated blocking work such
    as LangGraph's sync nodes. Cancelling the await does not stop the run; the child
    still dies at its deadline.
    """
    call = functools.partial(run_program, source, toolbox, agent_input, agent_output, limits)
    return await asyncio.get_running_loop().run_in_executor(_async_pool(), call)


def _async_pool() -> ThreadPoolExecutor:
    """The lazily created pool behind :func:`arun_program`; waiting threads hold no GIL."""
    with _lock:
        if not _pool:
            workers = max(8, 4 * (os.cpu_count() or 1))
            _pool.append(ThreadPoolExecutor(workers, thread_name_prefix="guard-sandbox"))
        return _pool[0]
