"""The caller's side of the warm workers: a pool per limits, one run at a time each.

A worker (:mod:`guardagent.sandbox.worker`) is forked by the zygote on first use and reused
for later runs of trusted programs with the same limits, whatever their built-in toolbox; a
thread takes an idle one (or starts one), sends one request, and reads one line under the
wall-clock deadline. A worker is dropped, never reused, when it timed out (SIGKILLed here),
died (the zygote reports its wait status), said it retires, or has something unread when
taken (it died idle). Outcomes are those of
:func:`~guardagent.sandbox.azygote.run_in_zygote`, so the sandbox reads both paths alike.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import threading
import time
from dataclasses import asdict
from typing import Any

from guardagent.sandbox import zygote
from guardagent.sandbox.worker import MAX_RUNS

_MAX_IDLE = 64  # idle workers kept per limits (beyond: closed after their run)
_START_SECONDS = 10.0


class _Worker:
    """One worker's connection and pid."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self.runs = 0

    def idle_and_alive(self) -> bool:
        """Nothing to read and not hung up: a worker that died idle is not reused."""
        poller = select.poll()
        poller.register(self.sock, select.POLLIN | select.POLLHUP | select.POLLERR)
        return not poller.poll(0)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)
        self.sock.close()


_lock = threading.Lock()
_idle: dict[tuple[Any, ...], list[_Worker]] = {}
_owner: list[int] = []


def _own() -> None:
    """Make this process the owner of the idle workers (under `_lock`).

    A forked copy of a caller inherits `_idle`, whose sockets are not its own: dropped.
    """
    if _owner != [os.getpid()]:
        _idle.clear()
        _owner[:] = [os.getpid()]


def _take(key: tuple[Any, ...]) -> _Worker | None:
    with _lock:
        _own()
        for stale in [k for k in _idle if k[0] != key[0]]:  # a replaced zygote's workers
            for worker in _idle.pop(stale):
                worker.sock.close()  # it reads EOF and exits
        workers = _idle.get(key, [])
        while workers:
            candidate = workers.pop()
            if candidate.idle_and_alive():
                return candidate
            candidate.sock.close()
    return None


def _give_back(key: tuple[Any, ...], worker: _Worker) -> None:
    with _lock:
        _own()  # a worker started before this process ever took one (a warm-up) is kept
        workers = _idle.setdefault(key, [])
        if len(workers) < _MAX_IDLE:
            workers.append(worker)
            return
    worker.sock.close()


def _start(path: str, refs: list[list[str]], limits: Any, source: str | None = None) -> _Worker:
    """Ask the zygote for a worker; its first line is the worker's pid.

    The zygote compiles `source` first (the program the worker is started for), so this
    worker and every later one start with it compiled.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        request = {"worker": 1, "tools": refs, "limits": asdict(limits), "source": source}
        sock.sendall(json.dumps(request).encode() + b"\n")
        line = next(zygote._lines(sock, time.monotonic() + _START_SECONDS), None)
        if line is None or not line.startswith(b'{"pid"'):
            raise OSError(f"the zygote did not start a worker: {line!r}")
        pid = int(json.loads(line)["pid"])
        if pid <= 0:
            raise OSError(f"the zygote refused a worker: {line!r}")
        return _Worker(sock, pid)
    except BaseException:
        sock.close()
        raise


def start_idle(refs: list[list[str]], limits: Any, source: str | None = None) -> None:
    """Have one worker idle for `limits` (a warm-up: its fork is then not on an event).

    Nothing is started when one is idle already; `source` is compiled by the zygote first.
    """
    path = zygote._zygote().path
    key = (path, tuple(asdict(limits).values()))
    with _lock:
        _own()
        if _idle.get(key):
            return
    _give_back(key, _start(path, refs, limits, source))


def run_warm(
    source: str,
    refs: list[list[str]],
    inputs: tuple[str, str],
    limits: Any,
    facts: dict[str, Any] | None = None,
) -> tuple[str, Any]:
    """Run one trusted program in a warm worker.

    Returns:
        As :func:`~guardagent.sandbox.azygote.run_in_zygote`: ("line", bytes), ("status",
        int), ("timeout", None) or ("eof", None).

    Raises:
        OSError: no worker could be reached before the request was sent (the caller then
            forks a one-run child instead: the program has not run).
    """
    path = zygote._zygote().path  # may start the zygote: not part of the program's time
    key = (path, tuple(asdict(limits).values()))  # one worker serves every built-in toolbox
    worker = _take(key) or _start(path, refs, limits, source)
    request = (
        json.dumps(
            {
                "tools": refs,
                "source": source,
                "input": inputs[0],
                "output": inputs[1],
                "facts": facts,
            }
        ).encode()
        + b"\n"
    )
    try:
        worker.sock.sendall(request)
    except OSError:
        worker.kill()
        raise
    line = next(zygote._lines(worker.sock, time.monotonic() + limits.wall_seconds), b"")
    if line is None:
        worker.kill()
        return "timeout", None
    if not line:
        worker.kill()
        return "eof", None
    if line.startswith(b'{"x"'):
        worker.kill()
        return "status", int(json.loads(line)["x"])
    worker.runs += 1
    if line.endswith(b', "w": 1}') or worker.runs >= MAX_RUNS:  # it retires after this run
        worker.sock.close()
    else:
        _give_back(key, worker)
    return "line", line
