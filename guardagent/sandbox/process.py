"""Run LLM-generated guard programs in a forked, rlimited child process.

Two independent layers: RestrictedPython (:mod:`guardagent.sandbox.policy`) limits what
the code can name, and a fresh child process per run limits what it can do if that layer
fails: empty environment, no file descriptors but the result pipe, an empty working
directory, CPU/address-space/file-size/descriptor limits and a parent-side SIGKILL at the
wall-clock deadline. The child also overwrites the environment strings it inherited, so
`/proc/self/environ` shows none (its memory is still a copy of the caller's: a caller-forked
child holds whatever the caller held, keys of API clients included). A model-written program
that has not verified gets a freshly forked child per run, so no state survives it. Trusted
programs (shipped or verified) with a built-in toolbox run in a warm worker instead
(:mod:`guardagent.sandbox.worker`): the same isolation and limits, fresh globals per run, no
fork per event, replaced after a timeout, a crash, a limit or a bounded number of runs. Toolboxes of
registered built-ins are forked by a small pre-warmed zygote (:mod:`guardagent.sandbox.zygote`),
which is cheaper than forking a guard process with LangGraph and Chroma loaded; any other
toolbox is forked from the caller, so functions registered at any time, closures in
`__main__` included, run with the caller's state. Only one JSON line crosses back; nothing is
unpickled.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import os
import select
import signal
import threading
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from types import CodeType
from typing import Any

from typing_extensions import TypedDict

from guardagent.environment import SANDBOX_WARM, SANDBOX_ZYGOTE, value
from guardagent.policy.recorder import Assignments, PredicateError, PredicateRecorder
from guardagent.readers.evidence import Unreadable
from guardagent.readers.user_facts import normalize_facts
from guardagent.sandbox.azygote import arun_in_zygote, run_in_zygote
from guardagent.sandbox.child import (
    _MAX_PAYLOAD,
    SandboxLimits,
    _child,
    _protected_names,
    check_program,
    compile_for_run,
    empty_cwd_fd,
    limit_maxima,
    limit_problems,
    prepare_run,
    set_limit_maxima,
)
from guardagent.sandbox.policy import TRUNCATED_MARK, compile_program, prepare_program
from guardagent.sandbox.warm import run_warm, start_idle
from guardagent.sandbox.zygote import runs_nice, start_zygote, toolbox_refs
from guardagent.tools.registry import Toolbox
from guardagent.tools.verdict import Verdict, VerdictError, VerdictRecorder

__all__ = [
    "ExecutionResult",
    "SandboxLimits",
    "arun_program",
    "check_program",
    "compile_for_run",
    "limit_maxima",
    "limit_problems",
    "run_program",
    "set_limit_maxima",
]

_MAX_ERROR_CHARS = 4000
_SIGNAL_ERRORS: dict[int, str] = {
    signal.SIGXCPU.value: "LimitExceeded: CPU time limit exceeded",
    signal.SIGXFSZ.value: "LimitExceeded: file size limit exceeded",
    signal.SIGKILL.value: "LimitExceeded: killed (CPU or memory limit)",
}


_Ended = tuple[Verdict | None, str | None, str, list[Unreadable], Assignments]
"""(verdict, error, stdout, unreadable, predicates): how a child's run ended, read the same
for both forks."""


class ExecutionResult(TypedDict):
    """What one run produced; plain JSON-able data.

    `verdict` is only set when `ok` is True, so a caller that forgets to check `ok` still
    cannot read an allow out of a failed run. `unreadable` lists what the readers could not
    read; when it is non-empty the run is not ok and the event must be denied for it, not
    debugged (the program is not at fault, the evidence is). `predicates` holds what a
    program under a policy model assigned (empty unless `ok`); such a run is ok without a
    verdict, and the `verify` node decides it.
    """

    ok: bool
    verdict: Verdict | None
    error: str | None
    stdout: str
    duration_ms: float
    unreadable: list[Unreadable]
    predicates: Assignments


# --------------------------------------------------------------------------- parent side

_zombies: set[int] = set()
_lock = threading.Lock()
_pool: list[ThreadPoolExecutor] = []


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


def _parse_payload(line: bytes, max_output: int) -> _Ended:
    """Validate the child's line as data (the child is not trusted); caps re-applied here."""
    try:
        payload = json.loads(line)
        verdict, error, stdout = payload.get("v"), payload.get("e"), payload.get("o", "")
        if not (isinstance(error, str | None) and isinstance(stdout, str)):
            raise ValueError("bad field types")
        if len(stdout) > max_output + len(TRUNCATED_MARK):
            stdout = stdout[:max_output] + TRUNCATED_MARK
        unread = _revalidate_unreadable(payload.get("u", []))
        if unread and error is None:
            raise ValueError("unreadable evidence without an error")
        predicates = PredicateRecorder.from_json(payload.get("p", {}))
        if predicates and error is not None:
            raise ValueError("predicates from a failed run")
        return (
            _revalidate(verdict),
            error and error[:_MAX_ERROR_CHARS],
            stdout,
            unread,
            predicates,
        )
    except (
        ValueError,
        TypeError,
        AttributeError,
        RecursionError,
        VerdictError,
        PredicateError,
    ) as exc:
        return None, f"SandboxError: malformed result from child ({exc})", "", [], {}


def _revalidate_unreadable(raw: Any) -> list[Unreadable]:
    """The child's ledger entries, rebuilt as exactly `{"reason": str, "detail": str}`."""
    if type(raw) is not list or len(raw) > 100:
        raise ValueError("bad unreadable list")
    out: list[Unreadable] = []
    for item in raw:
        if type(item) is not dict or set(item) != {"reason", "detail"}:
            raise ValueError("bad unreadable entry")
        if type(item["reason"]) is not str or type(item["detail"]) is not str:
            raise ValueError("bad unreadable entry")
        out.append(Unreadable(reason=item["reason"][:80], detail=item["detail"][:400]))
    return out


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
    code: CodeType | None,
    source: str,
    toolbox: Toolbox,
    inputs: tuple[str, str],
    limits: SandboxLimits,
    facts: dict[str, Any] | None,
) -> _Ended:
    """Fork one child for one run and turn whatever happens into an `_Ended`."""
    run = prepare_run(code, source, toolbox, inputs, limits, facts)
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
    start: float,
    verdict: Verdict | None,
    error: str | None,
    stdout: str = "",
    unreadable: list[Unreadable] | None = None,
    predicates: Assignments | None = None,
) -> ExecutionResult:
    ok = error is None and (verdict is not None or bool(predicates))
    return ExecutionResult(
        ok=ok,
        verdict=verdict if ok else None,
        error=error,
        stdout=stdout,
        duration_ms=(time.perf_counter() - start) * 1000,
        unreadable=list(unreadable or []),
        predicates=dict(predicates or {}) if ok else {},
    )


def run_program(
    source: str,
    toolbox: Toolbox,
    agent_input: str,
    agent_output: str,
    limits: SandboxLimits | None = None,
    *,
    user_facts: Mapping[str, Any] | None = None,
    trusted: bool = False,
) -> ExecutionResult:
    """Run a guard program in a sandbox process and return its single verdict.

    A fresh child per run, except for `trusted` programs with a built-in toolbox: those run
    in a warm worker (:mod:`guardagent.sandbox.worker`), isolated the same way but reused
    for many runs with fresh globals each, so no fork is paid per event.

    Never raises for a bad program: compile/policy rejections, runtime errors, missing or
    duplicate verdicts, limit kills and sandbox failures all come back with `ok=False`.
    Safe to call from several threads at once.

    Args:
        source: The guard program (RestrictedPython subset).
        toolbox: Trusted functions bound as globals; registered functions are picked up
            by fork, so closures and `__main__` functions work.
        agent_input: Bound as `agent_input`.
        agent_output: Bound as `agent_output`.
        limits: Resource limits; defaults to `SandboxLimits()`. They may lower the
            process's maxima (:func:`limit_maxima`), never raise them.
        user_facts: The host's structured facts about the user: `parse_user_info` returns
            them in the child (types kept) instead of reading `agent_input`'s text block.
        trusted: The program shipped with the deployment or verified on the profile's
            demonstrations in this process; a model-written program that has not verified
            must never be marked trusted (it keeps one fresh process per run).

    """
    start = time.perf_counter()
    limits = limits or SandboxLimits()
    checked = _checked(start, source, toolbox, agent_input, agent_output, limits, user_facts)
    if isinstance(checked, dict):
        return checked
    code, facts = checked
    inputs = (agent_input, agent_output)
    try:
        refs = toolbox_refs(toolbox) if _zygote_enabled() else None
        try:
            if refs is not None and trusted and _warm_enabled():
                return _result(start, *_warm_run(source, refs, inputs, limits, facts))
        except OSError:  # no worker reachable; the program has not run: fork one child
            pass
        try:
            if refs is not None:
                return _result(start, *_zygote_run(source, refs, inputs, limits, facts))
        except Exception:  # noqa: BLE001 - no usable zygote (could not start, died, ...):
            pass  # fork the caller instead, which is just as isolated
        ended = _fork_run(code, source, toolbox, inputs, limits, facts)
    except OSError as exc:
        return _result(start, None, f"SandboxError: {type(exc).__name__}: {exc}")
    return _result(start, *ended)


def _checked(
    start: float,
    source: str,
    toolbox: Toolbox,
    agent_input: str,
    agent_output: str,
    limits: SandboxLimits,
    user_facts: Mapping[str, Any] | None,
) -> ExecutionResult | tuple[CodeType | None, dict[str, Any] | None]:
    """The refusal of a run that must not start, else (compiled code, normalized facts)."""
    if type(agent_input) is not str or type(agent_output) is not str:
        return _result(start, None, "SandboxError: agent_input and agent_output must be str")
    problems = limit_problems(limits, limit_maxima())
    if problems:
        return _result(start, None, "SandboxError: limits refused: " + "; ".join(problems))
    try:
        facts = None if user_facts is None else normalize_facts(user_facts)
    except ValueError as exc:
        return _result(start, None, f"SandboxError: user facts refused: {exc}")
    if type(source) is not str or len(source) > limits.max_source_chars:
        return _result(
            start,
            None,
            f"CompileError: source must be a str of at most {limits.max_source_chars} chars",
        )
    code, rejection = compile_for_run(source, toolbox)
    if rejection is not None:
        return _result(start, None, rejection)
    return code, facts


_one_shot: list[bool] = []


@contextlib.contextmanager
def without_zygote() -> Iterator[None]:
    """Within: fork this process for every run, start no zygote and no warm worker.

    For a process that decides once and exits (the `check` command): starting a zygote
    costs several hundred milliseconds, one fork of the process itself a few, and every run
    is just as isolated. Outside it, `GUARDAGENT_SANDBOX_ZYGOTE=0` does the same.
    """
    _one_shot.append(True)
    try:
        yield
    finally:
        _one_shot.pop()


def _zygote_enabled() -> bool:
    if _one_shot:
        return False
    return value(SANDBOX_ZYGOTE)


def prestart_worker(toolbox: Toolbox, limits: SandboxLimits, source: str | None = None) -> bool:
    """Start a warm worker for `toolbox` now (a deployment's warm-up), if it would get one.

    Returns whether one is idle now. Never raises: without a worker the first trusted run
    starts one, as it would have anyway.
    """
    refs = toolbox_refs(toolbox)
    if refs is None or not (_zygote_enabled() and _warm_enabled()):
        return False
    try:
        start_idle(refs, limits, source)
    except (OSError, ValueError):
        return False
    return True


def prestart_runs() -> bool:
    """Start the zygote of one-run children now (a model-path deployment's warm-up).

    Returns whether it runs. Never raises: without it the first model-written program's run
    starts it, as it would have anyway.
    """
    if not _zygote_enabled():
        return False
    try:
        start_zygote(runs_nice())
    except (OSError, ValueError):
        return False
    return True


def _warm_enabled() -> bool:
    return value(SANDBOX_WARM)


def _warm_run(
    source: str,
    refs: list[list[str]],
    inputs: tuple[str, str],
    limits: SandboxLimits,
    facts: dict[str, Any] | None,
) -> _Ended:
    """One run in a warm worker (no fork); same outcomes as a fork."""
    outcome, value = run_warm(source, refs, inputs, limits, facts)
    if outcome == "status":
        return _ended("eof", b"", value, limits)
    return _ended(outcome, value or b"", None, limits)


def ended_parts(ended: tuple[str, Any]) -> tuple[str, bytes, int | None]:
    """A zygote run's (outcome, value) as `_ended`'s (outcome, line, status)."""
    outcome, value = ended
    if outcome == "status":
        return "eof", b"", value
    return outcome, value or b"", None


def _zygote_run(
    source: str,
    refs: list[list[str]],
    inputs: tuple[str, str],
    limits: SandboxLimits,
    facts: dict[str, Any] | None,
) -> _Ended:
    """One run in a child of the pre-warmed zygote (cheap fork); same outcomes as a fork."""
    return _ended(*ended_parts(run_in_zygote(source, refs, inputs, limits, facts)), limits)


def _ended(outcome: str, line: bytes, status: int | None, limits: SandboxLimits) -> _Ended:
    """How a child ended, as an `_Ended`: one reading for both fork paths."""
    if outcome == "line":
        return _parse_payload(line, limits.max_output_chars)
    if outcome == "timeout":
        timeout = f"Timeout: exceeded the wall-clock limit of {limits.wall_seconds} s"
        return None, timeout, "", [], {}
    if outcome == "oversize":
        return None, "LimitExceeded: result too large", "", [], {}
    return None, _death_error(status), "", [], {}


def run_shipped_program(
    source: str,
    toolbox: Toolbox,
    agent_input: str,
    agent_output: str,
    limits: SandboxLimits | None = None,
) -> ExecutionResult:
    """Run a program that ships with the installed package in this process, without a fork.

    Only for code that is part of the package (a built-in profile's own program, as trusted
    as the readers it calls). It compiles under the same RestrictedPython policy and runs
    with the same globals, recorders and unreadable-evidence ledger as in a child (in a copy
    of the current context, so nothing it binds leaks), and its result is read back through
    the same validation, so the outcome is the child's. What it lacks are the process limits,
    which exist for hostile code. Verification uses it to check a built-in program on its
    counterfactual events at start-up without forking a child for each; decisions always run
    in a child (:func:`run_program`).
    """
    start = time.perf_counter()
    limits = limits or SandboxLimits()
    compiled = compile_program(source, _protected_names(toolbox))
    if compiled.code is None:
        return _result(start, None, compiled.rejection())
    program = prepare_program(
        compiled.code, toolbox, agent_input, agent_output, limits.max_output_chars
    )
    payload = contextvars.copy_context().run(program.execute)
    line = json.dumps(payload).encode()
    return _result(start, *_parse_payload(line, limits.max_output_chars))


async def arun_program(
    source: str,
    toolbox: Toolbox,
    agent_input: str,
    agent_output: str,
    limits: SandboxLimits | None = None,
    *,
    user_facts: Mapping[str, Any] | None = None,
    trusted: bool = False,
) -> ExecutionResult:
    """:func:`run_program` without blocking the event loop: the same checks and outcomes.

    A run in a zygote child (a program that is not trusted, or no warm worker) is awaited on
    the loop itself (:mod:`guardagent.sandbox.azygote`): no thread waits for the child, and
    a cancelled await kills it. Any other run (a warm worker, a fork of this process, the
    first run, which starts the zygote) happens on a worker thread of the sandbox's own
    pool, not the loop's default executor: a burst of slow programs (each up to
    `wall_seconds`) must not starve unrelated blocking work; cancelling that await does not
    stop the run, and its child still dies at its deadline.
    """
    start = time.perf_counter()
    checked = _checked(
        start, source, toolbox, agent_input, agent_output, limits or SandboxLimits(), user_facts
    )
    if isinstance(checked, dict):
        return checked
    refs = toolbox_refs(toolbox) if _zygote_enabled() else None
    if refs is not None and not (trusted and _warm_enabled()):
        try:
            ended = await arun_in_zygote(
                source, refs, (agent_input, agent_output), limits or SandboxLimits(), checked[1]
            )
        except Exception:  # noqa: BLE001 - as run_program: no usable zygote (none yet: NoZygote)
            pass  # the threaded path starts one, or forks the caller
        else:
            return _result(start, *_ended(*ended_parts(ended), limits or SandboxLimits()))
    call = functools.partial(
        run_program,
        source,
        toolbox,
        agent_input,
        agent_output,
        limits,
        user_facts=user_facts,
        trusted=trusted,
    )
    return await asyncio.get_running_loop().run_in_executor(_async_pool(), call)


def _async_pool() -> ThreadPoolExecutor:
    """The lazily created pool behind :func:`arun_program`; waiting threads hold no GIL."""
    with _lock:
        if not _pool:
            workers = max(8, 4 * (os.cpu_count() or 1))
            _pool.append(ThreadPoolExecutor(workers, thread_name_prefix="guard-sandbox"))
        return _pool[0]
