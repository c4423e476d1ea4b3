"""A small pre-warmed process that forks one sandbox child per run.

Forking the caller costs time in proportion to what it maps: a guard process with LangGraph
and Chroma loaded maps 500+ MB and pays ~5 ms per fork before the program even starts. The
zygote is a fresh interpreter that imports only the sandbox and the built-in toolbox (~15 MB),
so its forks are cheap, and each child is still a fresh copy: nothing survives a run.

The zygote serves toolboxes made only of built-in functions (modules under `guardagent.`),
which it imports itself. User functions may close over state of the calling process (a
runtime-loaded table, a client), which a re-import would not reproduce, so those toolboxes
keep forking from the caller. Requests and results are JSON lines over a private Unix socket.

The zygote keeps children forked ahead of time (spares): a request is handed to the oldest
with its result pipe's write end (SCM_RIGHTS), so the fork is paid before the request. It
keeps one always, and while no run is in flight forks more, up to as many runs as were in
flight at once in the last minute (at least `SPARES`, at most `MAX_SPARES`): a batch of 32
decisions finds 32 children ready instead of 32 forks queued behind its runs on the same
cores, and a spare's fork and rehearsal never take a core from a run (each spare costs ~1.3
MB). A spare serves exactly one request, so every run still gets a fresh process; while it
waits it rehearses reading and preparing a request with no event (our own trivial program,
prepared and dropped, never run), so the pages a run writes to are copied before the request
arrives.

A process has up to two zygotes, by CPU priority (:func:`runs_nice`): one-run children come
from a zygote below the guard's priority, which keeps the spares; warm workers, which serve
trusted programs on the fast path, from one at the guard's own priority, which keeps none.

The zygote trusts nothing around it. It starts in isolated mode (`python -I`: no
`PYTHON*` variables, no user site, no working directory on `sys.path`) with an empty
environment, and imports the standard library, site-packages and this package's own
directory only, so no module on the caller's `sys.path` (a `python -m` working directory)
can shadow one it imports. Each request is checked before any fork: built-in functions only,
limits that may lower, never raise, the caller's maxima (given when the zygote starts), user
facts that are a JSON object. Requests are read without blocking, so one client that sends
half a line delays nobody (it is dropped after a few seconds).

Protocol, one connection per run: the caller sends one request line; the zygote answers
`{"pid": N}` with the read end of a pipe passed along (SCM_RIGHTS), and the child writes its
result line (the sandbox's child format) to that pipe; if the child dies without a result,
the zygote sends `{"x": wait_status}` on the connection (:class:`Reply` reads both). The
child never holds the caller's socket: handing a Unix socket over made the kernel's AF_UNIX
garbage collector run at every close, preempting the guard's event loop for milliseconds.
The caller enforces the wall-clock limit by killing the child's pid. A request `{"worker": 1,
"tools", "limits"}` instead forks a warm worker (:mod:`guardagent.sandbox.worker`) that
inherits the connection, announces its pid on it and then serves many runs there; its death
is reported as a one-run child's.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import importlib
import json
import math
import os
import select
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from guardagent.environment import SANDBOX_NICE, value
from guardagent.readers.user_facts import normalize_facts
from guardagent.sandbox import child, worker
from guardagent.tools.registry import DEFAULT_TOOLBOX, Toolbox, ToolSpec

BUILTIN_PREFIX = "guardagent."
_PREFIX = "guard-zygote-"
_MAX_REQUEST = 64 * 1024 * 1024
_READ_SECONDS = 10.0  # a client has this long to send its whole request line
_MAX_INCOMING = 256  # requests arriving at once; beyond, the oldest is dropped
_PACKAGE_DIR = str(Path(__file__).resolve().parent.parent)
# Run by `python -I -c`: load this package from its own directory (nothing else from there
# goes on sys.path), after the standard library and site-packages, then serve.
_BOOT = """\
import importlib.util, sys
package = sys.argv[1]
spec = importlib.util.spec_from_file_location(
    "guardagent", package + "/__init__.py", submodule_search_locations=[package])
module = importlib.util.module_from_spec(spec)
sys.modules["guardagent"] = module
spec.loader.exec_module(module)
from guardagent.sandbox.zygote import serve
serve(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
"""


# --------------------------------------------------------------------------- caller side


def _resolve(module: str, qualname: str) -> Any:
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _builtin_ref(func: Any) -> tuple[str, str] | None:
    """(module, qualname) when `func` is exactly a registered built-in the zygote can import."""
    module = getattr(func, "__module__", "") or ""
    qualname = getattr(func, "__qualname__", "") or ""
    if not module.startswith(BUILTIN_PREFIX) or "<" in qualname:
        return None
    if DEFAULT_TOOLBOX.function(getattr(func, "__name__", "")) is not func:
        return None
    try:  # a wrapper or bound method that merely reports a built-in's name is not it
        return (module, qualname) if _resolve(module, qualname) is func else None
    except (ImportError, AttributeError):
        return None


def toolbox_refs(toolbox: Toolbox) -> list[list[str]] | None:
    """[name, module, qualname, group] per function, or None if any is not a built-in."""
    refs = []
    for spec in toolbox:
        ref = _builtin_ref(spec.func)
        if ref is None:
            return None
        refs.append([spec.name, *ref, spec.group])
    return refs


"""How much lower than the guard's own the CPU priority of one-run children is, by default."""


def runs_nice() -> int:
    """The niceness of the zygote that forks one-run children (`GUARDAGENT_SANDBOX_NICE`).

    A one-run child runs a program the model wrote and nothing has verified: it must not
    take the CPU from the guard's own event loop, whose work every other decision waits on
    (a burst of 32 such runs, ~6 ms of CPU each with their forks, used to slow the loop's
    work by half). At the default 10 a child still gets about a tenth of a core that
    something else wants, and all of an idle one. Warm workers, which run trusted programs
    on the fast path, come from a zygote of the guard's own priority. 0 puts both in one
    zygote at the guard's priority; values are clamped to 0-19.

    Raises:
        ValueError: the variable is set to something that is not an integer.
    """
    return value(SANDBOX_NICE)


class _Zygote:
    """The running zygote process and the path of its socket.

    Args:
        nice: How much to lower the zygote's CPU priority (its children inherit it).
        spares: Whether it keeps one-run children forked ahead (the workers' zygote does
            not when one-run children have their own).
    """

    def __init__(self, nice: int = 0, spares: bool = True) -> None:
        _sweep_stale()
        self.maxima = child.limit_maxima()
        self.dir = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
        self.path = os.path.join(self.dir, "zygote.sock")
        # Isolated mode and an empty environment: the caller's sys.path, PYTHONPATH and
        # working directory never reach the zygote (see the module docstring).
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-c",
                _BOOT,
                _PACKAGE_DIR,
                self.path,
                json.dumps(asdict(self.maxima)),
                str(nice),
                str(int(spares)),
            ],
            env={},
            cwd=self.dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )  # (same process group: a group kill of the caller takes the zygote too)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise OSError("the sandbox zygote did not start")
            time.sleep(0.01)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.rmdir(self.dir)


def _sweep_stale() -> None:
    """Remove socket directories left by callers that were killed (no atexit ran)."""
    for entry in glob.glob(os.path.join(tempfile.gettempdir(), f"{_PREFIX}*-*")):
        try:
            owner = int(os.path.basename(entry)[len(_PREFIX) :].split("-", 1)[0])
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(entry, ignore_errors=True)
        except (ValueError, PermissionError):
            continue


_lock = threading.Lock()
_current: dict[int, _Zygote] = {}  # by niceness: warm workers' (0), one-run children's
_owner: list[int] = []


def _zygote(nice: int = 0) -> _Zygote:
    """The zygote of this process of that niceness, (re)started on demand.

    A forked caller starts its own. Warm workers come from the zygote of niceness 0, one-run
    children from that of :func:`runs_nice`.
    """
    with _lock:
        if _owner and _owner[0] != os.getpid():  # we are a fork of the owner: not ours
            _current.clear()
        found = _current.get(nice)
        if found is None or not found.alive() or found.maxima != child.limit_maxima():
            if found is not None:
                found.stop()
            found = _current[nice] = _Zygote(nice, spares=nice == runs_nice())
            _owner[:] = [os.getpid()]
        return found


def start_zygote(nice: int) -> None:
    """Have this process's zygote of that niceness running (a deployment's warm-up)."""
    _zygote(nice)


def stop_all() -> None:
    """Stop every zygote of this process (the next run starts its own afresh)."""
    with _lock:
        if _owner and _owner[0] == os.getpid():
            for found in _current.values():
                found.stop()
        _current.clear()


atexit.register(stop_all)


def _lines(sock: socket.socket, deadline: float, start: bytes = b"") -> Any:
    """Yield JSON lines from the socket until EOF or the deadline (then yields None)."""
    buf = bytearray(start)
    while True:
        end = buf.find(b"\n")
        if end >= 0:
            line, buf = bytes(buf[:end]), buf[end + 1 :]
            yield line
            continue
        remaining = deadline - time.monotonic()
        poller = select.poll()  # not select(): it fails for descriptors above 1023
        poller.register(sock, select.POLLIN | select.POLLHUP)
        if remaining <= 0 or not poller.poll(max(1, int(remaining * 1000))):
            yield None
            return
        chunk = sock.recv(65536)
        if not chunk:
            return
        buf += chunk


def zygote_path(nice: int) -> str:
    """The socket of this process's zygote of that niceness, started if there is none."""
    return _zygote(nice).path


def ready(fd: int, deadline: float) -> bool:
    """Whether `fd` is readable (data, EOF or hang-up) before the deadline."""
    remaining = deadline - time.monotonic()
    poller = select.poll()  # not select(): it fails for descriptors above 1023
    poller.register(fd, select.POLLIN | select.POLLHUP)
    return remaining > 0 and bool(poller.poll(max(1, int(remaining * 1000))))


_NO_PIPE = json.dumps(
    {
        "v": None,
        "o": "",
        "e": "SandboxError: the run's result pipe was not "
        "received (this process is at its descriptor limit?)",
    }
).encode()


class Reply:
    """A caller's reading of one run's reply (the protocol of the module docstring).

    The zygote answers on the caller's connection with `{"pid": N}` and, passed with that
    line, the read end of a pipe: the child writes its result line there. When the pipe
    ends without a line the child died without one, and the zygote's `{"x": status}`
    follows on the connection. A request refused before any fork is answered on the
    connection alone: `{"pid": 0}` and the error as a result line. Fed by the blocking
    reader and the event loop's alike (:mod:`guardagent.sandbox.azygote`); `wanted` says
    what to read next: "announce" (the connection), "result" (the pipe), or "status"
    (the connection again, from `rest`), unless `ended` is set.
    """

    def __init__(self) -> None:
        self.wanted = "announce"
        self.pid: int | None = None
        self.pipe: int | None = None
        self.rest = b""
        self.ended: tuple[str, Any] | None = None
        self._result = bytearray()

    def announced(self, data: bytes, fds: list[int]) -> None:
        """Bytes (and descriptors) read from the connection before the announcement ended."""
        for fd in fds:  # one, with the announcement
            if self.pipe is None and self.pid is None:
                self.pipe = fd
            else:
                os.close(fd)
        self.rest += data
        if not data:
            self.wanted, self.ended = "", ("eof", None)
            return
        end = self.rest.find(b"\n")
        if end < 0:
            return
        line, self.rest = self.rest[:end], self.rest[end + 1 :]
        self.pid, ended = read_reply(line, None)
        if ended is not None:
            self.wanted, self.ended = "", ended
        elif self.pipe is not None:
            self.wanted = "result"
        elif self.pid:  # a child runs, but its pipe did not arrive (our descriptor limit)
            kill(self.pid)
            self.wanted, self.ended = "", ("line", _NO_PIPE)
        else:  # refused before a fork: its answer follows here
            self.wanted = "status"

    def result(self, data: bytes) -> None:
        """Bytes read from the pipe (b"": it ended)."""
        self._result += data
        end = self._result.find(b"\n")
        if end >= 0:
            self.wanted, self.ended = "", ("line", bytes(self._result[:end]))
        elif not data:  # no result line: the zygote's status follows on the connection
            self.wanted = "status"
        else:
            return
        self.close()

    def timed_out(self) -> tuple[str, Any]:
        """Past the deadline: the child is killed."""
        kill(self.pid)
        self.close()
        return "timeout", None

    def close(self) -> None:
        """Close the pipe's read end (once)."""
        if self.pipe is not None:
            with contextlib.suppress(OSError):
                os.close(self.pipe)
            self.pipe = None


def run_request(
    source: str,
    refs: list[list[str]],
    inputs: tuple[str, str],
    limits: Any,
    facts: dict[str, Any] | None,
) -> bytes:
    """The request line of one run (protocol: see the module docstring)."""
    return (
        json.dumps(
            {
                "source": source,
                "tools": refs,
                "input": inputs[0],
                "output": inputs[1],
                "limits": asdict(limits),
                "facts": facts,
            }
        ).encode()
        + b"\n"
    )


def read_reply(line: bytes, pid: int | None) -> tuple[int | None, tuple[str, Any] | None]:
    """One line of the zygote's reply: (the child's pid, how the run ended, or None yet)."""
    if pid is None and line.startswith(b'{"pid"'):
        return int(json.loads(line)["pid"]), None
    if line.startswith(b'{"x"'):
        return pid, ("status", int(json.loads(line)["x"]))
    return pid, ("line", line)


def kill(pid: int | None) -> None:
    """Kill a run's child (past its deadline, or its caller gave up), if it announced itself."""
    if pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def expect_runs(count: int) -> bool:
    """Tell the running one-run zygote that `count` runs may come at once (a batch's width).

    It then keeps that many spares ready (up to `MAX_SPARES`) as soon as no run is in flight,
    instead of learning the width from the batch's first burst. A hint only: returns whether
    a zygote took it (none runs yet, or it is unreachable: nothing changes). Never blocks its
    caller (an event loop): a zygote being started, or one whose backlog is full, gets none.
    """
    path = running_path(runs_nice(), blocking=False)
    if path is None or count <= 1:
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.setblocking(False)
            sock.connect(path)
            sock.send(json.dumps({"spares": int(count)}).encode() + b"\n")
    except OSError:
        return False
    return True


def running_path(nice: int = 0, *, blocking: bool = True) -> str | None:
    """The socket of this process's live zygote of that niceness, or None (none yet, dead).

    With `blocking` false, also None while another thread holds the lock (starting one).
    """
    if not _lock.acquire(blocking=blocking):
        return None
    try:
        found = _current.get(nice)
        if _owner and _owner[0] == os.getpid() and found is not None and found.alive():
            return found.path if found.maxima == child.limit_maxima() else None
    finally:
        _lock.release()
    return None


# --------------------------------------------------------------------------- zygote side


def _toolbox(refs: list[list[str]], cache: dict[str, Toolbox]) -> Toolbox:
    key = json.dumps(refs)
    if key not in cache:
        specs = []
        for name, module, qualname, group in refs:
            func = _resolve(module, qualname) if module.startswith(BUILTIN_PREFIX) else None
            if func is None or _builtin_ref(func) is None:
                raise ValueError(f"not a registered built-in toolbox function: {module}.{qualname}")
            specs.append(ToolSpec(name, func, group))
        cache[key] = Toolbox(specs)
    return cache[key]


def _answer(conn: socket.socket, error: str) -> None:
    """Reply without forking (a rejected program or a malformed request) and hang up."""
    with contextlib.suppress(OSError):
        conn.setblocking(True)
        result = json.dumps({"v": None, "e": error, "o": ""}).encode()
        conn.sendall(b'{"pid": 0}\n' + result + b"\n")
    conn.close()


class _Request:
    """A request line, checked: what a child needs to build its run."""

    def __init__(self, raw: bytes, cache: dict[str, Toolbox], maxima: child.SandboxLimits) -> None:
        req = json.loads(raw)
        if type(req) is not dict:
            raise ValueError("a request is a JSON object")
        self.tools = req["tools"]
        self.toolbox = _toolbox(self.tools, cache)
        self.source, self.input, self.output = req["source"], req["input"], req["output"]
        if not all(type(x) is str for x in (self.source, self.input, self.output)):
            raise ValueError("source, input and output must be strings")
        self.limits_json = req["limits"]
        self.limits = child.limits_from_json(self.limits_json, maxima)
        if len(self.source) > self.limits.max_source_chars:
            raise ValueError(f"source longer than {self.limits.max_source_chars} chars")
        facts = req.get("facts")
        self.facts = None if facts is None else normalize_facts(facts)


def _child_run(
    raw: bytes, result_fd: int, cache: dict[str, Toolbox], maxima: child.SandboxLimits
) -> None:
    """In a fresh child: build the run from the request, run isolated, write to `result_fd`.

    `result_fd` is the write end of the run's pipe, whose read end the caller got with our
    pid from the zygote.
    """
    req = _Request(raw, cache, maxima)
    code, _ = child.compile_for_run(req.source, req.toolbox)  # cached: the zygote compiled it
    run = child.prepare_run(
        code, req.source, req.toolbox, (req.input, req.output), req.limits, req.facts
    )
    child.child_main(run, result_fd)


def _worker_main(conn: socket.socket, toolbox_of: Any, limits: child.SandboxLimits) -> None:
    """In a fresh child: announce our pid, then serve runs on the connection until retired."""
    conn.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
    worker.serve_worker(conn.fileno(), toolbox_of, limits)


_HEADER = 16  # fixed-width length of the request that follows a handed-over result pipe
SPARES = 4  # children forked ahead while the zygote is idle; a burst uses them up first
MAX_SPARES = 32  # at most, however many runs a burst had in flight
_DEMAND_SECONDS = 60.0  # how long the most runs in flight at once sizes the spares


WARM_SOURCE = "allow('warm-up')"
"""The program of a spare's rehearsal (:func:`_rehearse`): compiled by the zygote, never run."""


def rehearsal(req: _Request) -> bytes:
    """A request like `req` (its toolbox and limits) with no event and :data:`WARM_SOURCE`."""
    return json.dumps(
        {
            "source": WARM_SOURCE,
            "tools": req.tools,
            "input": "",
            "output": "",
            "limits": req.limits_json,
            "facts": None,
        }
    ).encode()


def _rehearse(raw: bytes, cache: dict[str, Toolbox], maxima: child.SandboxLimits) -> None:
    """Read and prepare a request the way a run does, and throw it all away.

    A forked child copies each page it writes to (reference counts write to every object
    it touches): reading and preparing its request cost a fresh child ~2 ms of page copies,
    most of the time before its program starts. A spare does it while it waits, on a
    request of no event and a program it never runs (:data:`WARM_SOURCE`, built by our own
    code, not a caller's), so a real request finds the pages copied. Nothing of it is kept:
    the prepared run is dropped and only the program compiled by the zygote is looked up.
    """
    req = _Request(raw, cache, maxima)
    code, _ = child.compile_for_run(req.source, req.toolbox)
    child.prepare_run(code, req.source, req.toolbox, (req.input, req.output), req.limits, req.facts)


def _spare_main(
    chan: socket.socket,
    cache: dict[str, Toolbox],
    maxima: child.SandboxLimits,
    warm: bytes | None = None,
) -> None:
    """A pre-forked child waiting for one request: the fork is paid before the request."""
    if warm is not None:
        with contextlib.suppress(Exception):  # a rehearsal only: the real request decides
            _rehearse(warm, cache, maxima)
    header, fds, _, _ = socket.recv_fds(chan, _HEADER, 1)
    if not fds:  # the zygote went away
        return
    result_fd = fds[0]  # the write end of the run's pipe
    while len(header) < _HEADER:
        header += chan.recv(_HEADER - len(header))
    size = int(header)
    raw = bytearray()
    while len(raw) < size:
        chunk = chan.recv(min(1 << 20, size - len(raw)))
        if not chunk:
            return
        raw += chunk
    chan.close()
    _child_run(bytes(raw), result_fd, cache, maxima)


def _fork(body: Any, *closing: Any) -> int:
    """Fork a child that closes the zygote's descriptors in `closing`, runs `body`, exits."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            signal.set_wakeup_fd(-1)
            for item in closing:
                with contextlib.suppress(OSError):
                    item.close() if hasattr(item, "close") else os.close(item)
            body()
        finally:
            os._exit(70)
    return pid


class _Incoming:
    """A connection whose request line is still arriving."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.buf = bytearray()
        self.deadline = time.monotonic() + _READ_SECONDS


class _Server:
    """The zygote's state: listener, requests arriving, in-flight runs, idle spare children.

    Requests are read as their bytes arrive (one `select` loop, no blocking read), so a
    client that stalls mid-line delays no other run; it is answered and dropped after
    `_READ_SECONDS`.
    """

    def __init__(
        self, listener: socket.socket, wake: tuple[int, int], maxima: child.SandboxLimits
    ) -> None:
        self.listener = listener
        self.wake = wake
        self.maxima = maxima
        self.selector = selectors.DefaultSelector()  # epoll: no 1024-descriptor ceiling
        self.incoming: dict[int, _Incoming] = {}
        self.pending: dict[int, socket.socket] = {}
        self.cache: dict[str, Toolbox] = {}
        self.spares: list[tuple[int, socket.socket]] = []
        self.workers: set[int] = set()  # pending warm workers: not runs in flight
        self.demand = (0, 0.0)  # the most runs in flight at once lately, and when
        self.no_spares_until = 0.0  # after a refused fork, no spare until then
        self.warm: bytes | None = None  # the rehearsal of the latest toolbox and limits

    def in_flight(self) -> int:
        """One-run children started and not yet reaped."""
        return len(self.pending) - len(self.workers)

    def _peak(self, now: float) -> int:
        """The most runs in flight at once (or hinted) lately: 0 once `_DEMAND_SECONDS` old."""
        peak, when = self.demand
        return peak if now - when <= _DEMAND_SECONDS else 0

    def wanted(self, least: int) -> int:
        """How many spares to keep: the recent peak of runs in flight, within bounds."""
        return min(MAX_SPARES, max(least, self._peak(time.monotonic())))

    def expect(self, conn: socket.socket, raw: bytes) -> None:
        """A caller's hint that a batch of that many runs may come (:func:`expect_runs`)."""
        conn.close()
        with contextlib.suppress(Exception):  # a malformed hint is ignored, never fatal
            count = json.loads(raw)["spares"]
            if type(count) is int:
                now = time.monotonic()
                self.demand = (max(self._peak(now), min(count, MAX_SPARES)), now)

    def _note_demand(self) -> None:
        now, runs = time.monotonic(), self.in_flight()
        if runs >= self._peak(now):
            self.demand = (runs, now)

    def _closing(self) -> list[Any]:
        """What a forked child must not keep.

        Our listener, wake pipe and selector, and every connection of another run (a copy
        held open would keep its client from seeing EOF).
        """
        return [
            self.listener,
            *self.wake,
            self.selector,
            *self.pending.values(),
            *(i.conn for i in self.incoming.values()),
            *(chan for _, chan in self.spares),
        ]

    def add_spare(self) -> None:
        """Fork one more child ahead of time (after the latest compile, so it has it).

        Each spare closes the other spares' channels: a copy held open would keep a spare
        waiting for a request after the zygote is gone. When the system refuses the fork
        (process or descriptor limits), no spare is tried again for a second: requests
        still fork their own child, or are answered with the error.
        """
        if time.monotonic() < self.no_spares_until:
            return
        try:
            ours, theirs = socket.socketpair()
        except OSError:
            self.no_spares_until = time.monotonic() + 1.0
            return
        cache, maxima, warm = self.cache, self.maxima, self.warm
        try:
            pid = _fork(lambda: _spare_main(theirs, cache, maxima, warm), ours, *self._closing())
        except OSError:
            ours.close()
            self.no_spares_until = time.monotonic() + 1.0
            return
        finally:
            theirs.close()
        self.spares.append((pid, ours))

    def accept(self) -> None:
        """Take every waiting connection; its request is read as it arrives."""
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            conn.setblocking(False)
            if len(self.incoming) >= _MAX_INCOMING:  # a flood: descriptors are finite
                oldest = min(self.incoming.values(), key=lambda i: i.deadline)
                _answer(self._done(oldest), "SandboxError: bad zygote request (too many)")
            self.incoming[conn.fileno()] = _Incoming(conn)
            self.selector.register(conn, selectors.EVENT_READ, "request")

    def read(self, conn: socket.socket) -> None:
        """Read what arrived; a complete line is handled, a closed or oversized one dropped."""
        incoming = self.incoming[conn.fileno()]
        try:
            chunk = conn.recv(1 << 20)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # the client went away before finishing its request
            self._done(incoming).close()
            return
        incoming.buf += chunk
        end = incoming.buf.find(b"\n")
        if end >= 0:
            self.handle(self._done(incoming), bytes(incoming.buf[:end]))
        elif len(incoming.buf) > _MAX_REQUEST:
            _answer(self._done(incoming), "SandboxError: bad zygote request (too large)")

    def expire(self) -> None:
        """Answer and drop connections that did not send their request in time."""
        now = time.monotonic()
        for incoming in [i for i in self.incoming.values() if i.deadline <= now]:
            _answer(self._done(incoming), "SandboxError: bad zygote request (not sent in time)")

    def next_deadline(self) -> float:
        return min((i.deadline for i in self.incoming.values()), default=math.inf)

    def _done(self, incoming: _Incoming) -> socket.socket:
        self.selector.unregister(incoming.conn)
        del self.incoming[incoming.conn.fileno()]
        incoming.conn.setblocking(True)
        return incoming.conn

    def handle(self, conn: socket.socket, raw: bytes) -> None:
        if raw.startswith(b'{"worker"'):
            return self.start_worker(conn, raw)
        if raw.startswith(b'{"spares"'):
            return self.expect(conn, raw)
        try:  # validated here, so a rejection needs no fork
            req = _Request(raw, self.cache, self.maxima)
            _, rejection = child.compile_for_run(req.source, req.toolbox)
        except Exception as exc:  # a malformed request is answered, never fatal to the zygote
            return _answer(conn, f"SandboxError: bad zygote request ({type(exc).__name__}: {exc})")
        if rejection is not None:
            return _answer(conn, rejection)
        self.rehearse_like(req)
        try:
            read_end, write_end = os.pipe()
        except OSError as exc:
            return _answer(conn, f"SandboxError: no pipe for the run ({exc})")
        try:
            pid = self._start_run(raw, write_end, (read_end, conn))
        except OSError as exc:  # no spare and no fork (process or descriptor limits)
            os.close(read_end)
            return _answer(conn, f"SandboxError: could not start the run ({exc})")
        finally:
            os.close(write_end)
        try:  # the child's pid, and the pipe it writes its result to
            socket.send_fds(conn, [json.dumps({"pid": pid}).encode() + b"\n"], [read_end])
        except OSError:  # the caller went away: nobody will read the result
            kill(pid)
        else:  # watched: a caller that hangs up before the result has its child killed
            self.selector.register(conn, selectors.EVENT_READ, ("run", pid))
        finally:
            os.close(read_end)
        self.pending[pid] = conn
        self._note_demand()

    def hung_up(self, pid: int) -> None:
        """A watched caller's connection is readable: at EOF (it went away), kill its child.

        A caller sends nothing after its request, so anything else it sends is dropped.
        """
        conn = self.pending.get(pid)
        if conn is None:
            return
        try:
            data = conn.recv(4096, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.selector.unregister(conn)
            kill(pid)  # reaped as any child; its status goes nowhere

    def _start_run(self, raw: bytes, write_end: int, not_its: tuple[int, socket.socket]) -> int:
        """The pid of the child that runs `raw` and writes its result to `write_end`.

        `not_its`: the pipe's read end and the caller's connection, which a forked child
        must not keep (it only writes its result; the caller reads it from the pipe).

        The oldest spare gets the pipe's write end (a pipe, not the caller's socket: passing
        a Unix socket makes the kernel's AF_UNIX garbage collector run on every close, which
        preempted the guard's event loop for milliseconds); else a child is forked now.
        """
        if self.spares:
            pid, chan = self.spares.pop(0)  # the oldest: its rehearsal is the likeliest done
            try:
                socket.send_fds(chan, [b"%016d" % len(raw)], [write_end])
                chan.sendall(raw)
                return pid
            except OSError:  # the spare died: fork one now
                pass
            finally:
                chan.close()
        cache, maxima = self.cache, self.maxima
        return _fork(lambda: _child_run(raw, write_end, cache, maxima), *not_its, *self._closing())

    def rehearse_like(self, req: _Request) -> None:
        """Spares forked from now on rehearse requests of `req`'s toolbox and limits."""
        warm = rehearsal(req)
        if warm != self.warm:
            with contextlib.suppress(Exception):
                child.compile_for_run(WARM_SOURCE, req.toolbox)  # kept here: spares have it
                self.warm = warm

    def start_worker(self, conn: socket.socket, raw: bytes) -> None:
        """Fork a warm worker (:mod:`guardagent.sandbox.worker`) that serves this connection."""
        try:
            req = json.loads(raw)
            toolbox = _toolbox(req["tools"], self.cache)
            limits = child.limits_from_json(req["limits"], self.maxima)
            source = req.get("source")
            if type(source) is str and len(source) <= limits.max_source_chars:
                child.compile_for_run(source, toolbox)  # cached here: every worker has it
        except Exception as exc:  # a malformed request is answered, never fatal to the zygote
            return _answer(conn, f"SandboxError: bad zygote request ({type(exc).__name__}: {exc})")
        cache = self.cache
        pid = _fork(
            lambda: _worker_main(conn, lambda refs: _toolbox(refs, cache), limits), *self._closing()
        )
        self.pending[pid] = conn
        self.workers.add(pid)

    def reap(self) -> None:
        """Report children that died without a result; forget a spare that died idle."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            for spare in [sp for sp in self.spares if sp[0] == pid]:  # died idle
                spare[1].close()
                self.spares.remove(spare)
            conn = self.pending.pop(pid, None)
            self.workers.discard(pid)
            if conn is not None:
                with contextlib.suppress(KeyError, ValueError):  # a watched one-run caller
                    self.selector.unregister(conn)
                with contextlib.suppress(OSError):
                    conn.sendall(json.dumps({"x": status}).encode() + b"\n")
                conn.close()


def serve(path: str, maxima: str | None = None, nice: str = "0", spares: str = "1") -> None:
    """Zygote main loop: accept a request, fork its child, report deaths, repeat.

    Exits when its caller is gone (re-parented), so a killed guard process leaves nothing.
    Ctrl-C in a terminal reaches the whole process group; the caller decides, not the zygote.

    Args:
        path: Where to listen (in a private directory the caller made).
        maxima: The caller's limit maxima as JSON (:func:`child.limit_maxima`); requests
            above them are refused.
        nice: How much to lower our CPU priority, and our children's (:func:`runs_nice`).
        spares: "0" to fork one-run children only on request (no spares kept).
    """
    caller = os.getppid()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if int(nice) > 0:
        os.nice(int(nice))
    most = child.SandboxLimits(**json.loads(maxima)) if maxima else child.limit_maxima()
    # The built-in toolbox loads on first use (guardagent.tools.builtins): load it here, so
    # a forked child, whose file limit is one descriptor past its result pipe, resolves a
    # request's tools without opening a module file.
    assert DEFAULT_TOOLBOX.names  # the property reads the table, which loads it
    try:
        _serve(path, caller, most, SPARES if spares != "0" else 0)
    finally:  # the caller may be gone: leave no socket or directory behind
        with contextlib.suppress(OSError):
            os.unlink(path)
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(path))


def _serve(path: str, caller: int, maxima: child.SandboxLimits, spares: int) -> None:
    tempfile.tempdir = os.path.dirname(path)  # our private directory; no TMPDIR to read
    child.empty_cwd_fd()  # made once, here: children only fchdir into it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.chmod(path + ".tmp", 0o600)
    listener.listen(128)
    listener.setblocking(False)
    os.rename(path + ".tmp", path)  # the caller waits for this name: ready means listening
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    server = _Server(listener, (wake_r, wake_w), maxima)
    server.selector.register(listener, selectors.EVENT_READ, "listen")
    server.selector.register(wake_r, selectors.EVENT_READ, "wake")
    while os.getppid() == caller:
        if not server.spares and spares:
            server.add_spare()
        # more only while nothing waits for us and no run is in flight
        refill = (
            bool(spares)
            and len(server.spares) < server.wanted(spares)
            and not (server.in_flight())
            and time.monotonic() >= server.no_spares_until
        )
        timeout = 0.0 if refill else max(0.0, min(1.0, server.next_deadline() - time.monotonic()))
        ready = server.selector.select(timeout)
        if not ready and refill:
            server.add_spare()
        for key, _ in ready:
            try:
                if key.data == "wake":
                    os.read(wake_r, 4096)
                    server.reap()
                elif key.data == "listen":
                    server.accept()
                elif key.fd in server.incoming:
                    server.read(server.incoming[key.fd].conn)
                elif isinstance(key.data, tuple) and server.pending.get(key.data[1]) is key.fileobj:
                    server.hung_up(key.data[1])
            except OSError:  # a client that went away mid-request
                continue
        server.expire()


if __name__ == "__main__":
    serve(sys.argv[1], *sys.argv[2:5])
