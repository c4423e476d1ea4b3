"""The zygote's client: one run, written once for the blocking caller and the event loop.

The protocol (a request line; the child's pid with the pipe of its result; its result, or its
death status from the zygote) is read by :class:`~guardagent.sandbox.zygote.Reply` in one
body, :func:`exchange` (:mod:`guardagent.twins`): :func:`run_in_zygote` performs its waits
with `poll`, :func:`arun_in_zygote` awaits them on the running loop, so no thread waits for a
run. Either way the wall-clock limit is the caller's to enforce: the child is killed at its
deadline, and a caller that gives up (an exception, its task cancelled) kills it at once
instead of leaving it to run until then. The event loop's path uses only a zygote already
running: starting one blocks for a while, so the first run of a process takes the blocking
path, which starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from functools import partial
from typing import Any

from guardagent.sandbox.zygote import (
    Reply,
    kill,
    read_reply,
    ready,
    run_request,
    running_path,
    runs_nice,
    zygote_path,
)
from guardagent.twins import Twin, Wait, arun, run


class NoZygote(RuntimeError):
    """No zygote is running in this process yet (the blocking path starts one)."""


def run_in_zygote(
    source: str,
    refs: list[list[str]],
    inputs: tuple[str, str],
    limits: Any,
    facts: dict[str, Any] | None = None,
) -> tuple[str, Any]:
    """Run one program in a zygote child, waiting for it (starting the zygote if needed).

    Returns:
        ("line", bytes) with the child's result line, ("status", int) when the child died
        without one, ("timeout", None) after killing it, or ("eof", None).
    """
    request = run_request(source, refs, inputs, limits, facts)
    path = zygote_path(runs_nice())  # may start the zygote: not part of the program's time
    return run(exchange(path, request, limits.wall_seconds))


async def arun_in_zygote(
    source: str,
    refs: list[list[str]],
    inputs: tuple[str, str],
    limits: Any,
    facts: dict[str, Any] | None = None,
) -> tuple[str, Any]:
    """Run one program in a zygote child, awaiting it on the running loop.

    Returns:
        As :func:`run_in_zygote`.

    Raises:
        NoZygote: none is running yet. OSError: it cannot be reached.
    """
    path = running_path(runs_nice())
    if path is None:
        raise NoZygote("no zygote running in this process")
    request = run_request(source, refs, inputs, limits, facts)
    return await arun(exchange(path, request, limits.wall_seconds))


def exchange(path: str, request: bytes, wall_seconds: float) -> Twin[tuple[str, Any]]:
    """One run's request and reply on the zygote at `path`, written once for both paths."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        yield Wait(partial(_connect, sock, path), partial(_aconnect, sock, path))
        deadline = time.monotonic() + wall_seconds
        yield Wait(partial(_send, sock, request), partial(_asend, sock, request))
        reply = Reply()
        try:
            while reply.wanted == "announce":
                if not (yield _readable(sock.fileno(), deadline)):
                    return reply.timed_out()
                with contextlib.suppress(BlockingIOError):
                    data, fds, _, _ = socket.recv_fds(sock, 65536, 1)
                    reply.announced(data, fds)
            while reply.wanted == "result" and reply.pipe is not None:
                if not (yield _readable(reply.pipe, deadline)):
                    return reply.timed_out()
                with contextlib.suppress(BlockingIOError):
                    reply.result(os.read(reply.pipe, 65536))
            if reply.ended is not None:
                return reply.ended
            return (yield from _status(sock, deadline, reply))
        except BaseException:
            kill(reply.pid)  # nobody will read its result: it must not run on to its deadline
            raise
        finally:
            reply.close()


def _status(sock: socket.socket, deadline: float, reply: Reply) -> Twin[tuple[str, Any]]:
    """The zygote's word on the connection after the child's (a refusal, a death status)."""
    buf = bytearray(reply.rest)
    while True:
        end = buf.find(b"\n")
        if end >= 0:
            line, buf = bytes(buf[:end]), buf[end + 1 :]
            reply.pid, ended = read_reply(line, reply.pid)
            if ended is not None:
                return ended
            continue
        if not (yield _readable(sock.fileno(), deadline)):
            return reply.timed_out()
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            continue
        if not chunk:
            return "eof", None
        buf += chunk


def _connect(sock: socket.socket, path: str) -> None:
    sock.connect(path)


def _send(sock: socket.socket, request: bytes) -> None:
    sock.sendall(request)
    sock.setblocking(False)  # reads follow a readiness wait, on either path


async def _aconnect(sock: socket.socket, path: str) -> None:
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, path)


async def _asend(sock: socket.socket, request: bytes) -> None:
    await asyncio.get_running_loop().sock_sendall(sock, request)


def _readable(fd: int, deadline: float) -> Wait:
    """Whether `fd` becomes readable (data, EOF or hang-up) before the deadline."""
    return Wait(partial(ready, fd, deadline), partial(_aready, fd, deadline))


async def _aready(fd: int, deadline: float) -> bool:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    loop.add_reader(fd, wake)
    try:
        async with asyncio.timeout(remaining):
            await woken
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
