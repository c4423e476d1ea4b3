"""The child side of a sandbox run: limits, the run's globals, isolation and the one result line.

Both ways of forking a child (from the caller, in :mod:`guardagent.sandbox.process`, and from
the pre-warmed zygote, in :mod:`guardagent.sandbox.zygote`) build the same `_Run` here and
hand it to :func:`child_main`, so a child is isolated the same way whoever forked it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import math
import os
import resource
import signal
import tempfile
import threading
from dataclasses import dataclass, fields
from functools import lru_cache
from types import CodeType
from typing import Any, NoReturn

from guardagent.policy.recorder import ASSIGN_NAMES
from guardagent.readers.user_facts import bind_host_facts
from guardagent.sandbox.policy import (
    INPUT_NAMES,
    PreparedProgram,
    compile_program,
    prepare_program,
)
from guardagent.tools.registry import Toolbox
from guardagent.tools.verdict import VERDICT_NAMES

_RESULT_FD = 3
_MAX_FD = os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 65536
_MAX_PAYLOAD = 4 * 1024 * 1024  # verdict + stdout + error, bytes of JSON
# RestrictedPython's transformer is pure Python: a hostile 100 kB source can take seconds
# to compile. Up to this size the parent compiles (and caches); above it, the child does,
# under the CPU and wall-clock limits.
_PARENT_COMPILE_CHARS = 16_000
_MEMORY_LINE = b'{"e": "LimitExceeded: memory limit exceeded while reporting"}\n'
_FAILED_LINE = b'{"e": "SandboxError: the child failed before reporting"}\n'
RESET_SIGNALS = tuple(
    int(s)
    for s in (
        signal.SIGINT,
        signal.SIGTERM,
        signal.SIGALRM,
        signal.SIGHUP,
        signal.SIGUSR1,
        signal.SIGUSR2,
        signal.SIGCHLD,
        signal.SIGPIPE,
        signal.SIGXCPU,
        signal.SIGXFSZ,
    )
)


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


_maxima: list[SandboxLimits] = [SandboxLimits(wall_seconds=60.0)]


def limit_maxima() -> SandboxLimits:
    """The most a run may ask for: the defaults, except a wall clock of up to 60 s.

    The wall clock is the caller's own deadline (the child's CPU stays capped by
    `cpu_seconds`), so deployments may allow slower programs without raising anything the
    child itself could use.
    """
    return _maxima[0]


def set_limit_maxima(maxima: SandboxLimits) -> None:
    """Change the process's limit maxima (a deployment decision; the zygote restarts on it)."""
    problems = limit_problems(
        maxima,
        SandboxLimits(
            wall_seconds=math.inf,
            cpu_seconds=2**31,
            memory_mb=2**31,
            max_output_chars=2**31,
            max_source_chars=2**31,
        ),
    )
    if problems:
        raise ValueError("; ".join(problems))
    _maxima[0] = maxima


def limit_problems(limits: Any, maxima: SandboxLimits) -> list[str]:
    """Why `limits` may not be used under `maxima`: [] when every field is sane and not higher.

    Requests may lower any limit, never raise one: the zygote checks every request with this
    too, so a forged or buggy request cannot buy a child more memory or CPU.
    """
    if not isinstance(limits, SandboxLimits):
        return [f"limits must be SandboxLimits, not {type(limits).__name__}"]
    problems = []
    for f in fields(SandboxLimits):
        value, most = getattr(limits, f.name), getattr(maxima, f.name)
        number = type(value) in (int, float) if f.name == "wall_seconds" else type(value) is int
        if not number or not math.isfinite(value) or value <= 0:
            problems.append(f"{f.name}={value!r} is not a positive number")
        elif value > most:
            problems.append(f"{f.name}={value!r} is above the maximum {most!r}")
    return problems


def limits_from_json(raw: Any, maxima: SandboxLimits) -> SandboxLimits:
    """A request's limits, rebuilt field by field and checked against `maxima`.

    Raises:
        ValueError: missing, unknown, mistyped or raised fields, each named.
    """
    names = {f.name for f in fields(SandboxLimits)}
    if type(raw) is not dict or set(raw) != names:
        raise ValueError(f"limits must have exactly the fields {sorted(names)}")
    limits = SandboxLimits(**raw)
    problems = limit_problems(limits, maxima)
    if problems:
        raise ValueError("limits refused: " + "; ".join(problems))
    return limits


# --------------------------------------------------------------------------- compile


def _protected_names(toolbox: Toolbox) -> frozenset[str]:
    return toolbox.names | VERDICT_NAMES | ASSIGN_NAMES | INPUT_NAMES


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
    facts: dict[str, Any] | None  # the host's structured user facts (JSON), if it gave any
    environ: tuple[int, int] | None  # the initial environment block to wipe in the child


def prepare_run(
    code: CodeType | None,
    source: str,
    toolbox: Toolbox,
    inputs: tuple[str, str],
    limits: SandboxLimits,
    facts: dict[str, Any] | None = None,
) -> _Run:
    """The program's fresh globals plus the child's limits, signals to reset and user facts."""
    program = prepare_program(code, toolbox, inputs[0], inputs[1], limits.max_output_chars)
    signals = [s for s in RESET_SIGNALS if callable(signal.getsignal(s))]
    protected = _protected_names(toolbox)
    return _Run(
        program,
        rlimits_for(limits),
        signals,
        None if code else source,
        protected,
        facts,
        environ_block(),
    )


@lru_cache(maxsize=1)
def environ_block() -> tuple[int, int] | None:
    """(start, end) addresses of this process's initial environment strings, from the kernel.

    `os.environ.clear()` empties the C `environ` array, but the strings the process started
    with stay where the kernel put them and `/proc/self/environ` keeps showing them; the
    child overwrites them. Read once in the parent: a fork has the same addresses.
    """
    try:
        with open("/proc/self/stat", "rb") as stat:
            after_name = stat.read().rsplit(b")", 1)[1].split()
        start, end = int(after_name[47]), int(after_name[48])  # fields 50, 51: env_start/end
    except (OSError, IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end and end - start < 64 * 1024 * 1024 else None


def _wipe_environ(block: tuple[int, int] | None) -> None:
    """Overwrite the initial environment strings with NULs (the `environ` array is empty)."""
    if block is not None:
        ctypes.memset(block[0], 0, block[1] - block[0])


def _compile_and_execute(run: _Run) -> dict[str, Any]:
    """In the child: bind the host's facts, compile if the parent left that to us, then run."""
    bind_host_facts(run.facts)
    if run.source is not None:
        compiled = compile_program(run.source, run.protected)
        if compiled.code is None:
            return {"v": None, "e": compiled.rejection(), "o": ""}
        run.program.code = compiled.code
    return run.program.execute()


def rlimits_for(limits: SandboxLimits) -> list[tuple[int, int, int]]:
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
    """Strip the child down: signals, cwd, descriptors, environment (block too), rlimits."""
    isolate_process(run.signals, run.rlimits, run.environ, cwd_fd, write_fd)
    gc.disable()  # a full collection would touch (copy) every page shared with the parent


def isolate_process(
    signals: list[int],
    rlimits: list[tuple[int, int, int]],
    environ: tuple[int, int] | None,
    cwd_fd: int,
    write_fd: int,
) -> None:
    """Isolate this process: what every sandbox process does before it runs a program.

    Resets `signals`, enters `cwd_fd`, keeps only `write_fd` (as fd 3), wipes the
    environment and sets `rlimits`; the same for a one-run child and a warm worker.
    """
    for sig in signals:  # only Python-level handlers: the program must not trigger them
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
    _wipe_environ(environ)
    for which, soft, hard in rlimits:
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


_lock = threading.Lock()
_cwd: list[int] = []


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


def compile_for_run(source: str, toolbox: Toolbox) -> tuple[CodeType | None, str | None]:
    """(code, None) to run, (None, rejection) to refuse, or (None, None): compile in the child.

    Small sources compile here (and are cached); large ones compile in the child, under its
    CPU and wall-clock limits, because RestrictedPython may take seconds on a hostile one.
    """
    if len(source) > _PARENT_COMPILE_CHARS:
        return None, None
    compiled = compile_program(source, _protected_names(toolbox))
    return compiled.code, (compiled.rejection() if compiled.code is None else None)
