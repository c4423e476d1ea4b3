"""The zygote's client on the event loop: one run with no thread waiting for it.

The same protocol as :func:`guardagent.sandbox.zygote.run_in_zygote` (a request line; the
child's pid with the pipe of its result; its result, or its death status from the zygote),
read by the same :class:`~guardagent.sandbox.zygote.Reply`, waiting on the loop. The
caller still enforces the wall-clock limit by killing the child at its deadline,
and a caller that gives up (its task cancelled) kills it at once instead of leaving it to
run until then. Only a zygote already running is used: starting one blocks for a while, so
the first run of a process takes the threaded path, which starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from typing import Any

from guardagent.sandbox.zygote import (
    Reply,
    kill,
    read_reply,
    run_request,
    running_path,
    runs_nice,
)


class NoZygote(RuntimeError):
    """No zygote is running in this process yet (the threaded path starts one)."""


async def arun_in_zygote(
    source: str, refs: list[list[str]], inputs: tuple[str, str], limits: Any,
    facts: dict[str, Any] | None = None,
) -> tuple[str, Any]:  # fmt: skip
    """Run one program in a zygote child, awaiting it on the running loop.

    Returns:
        As :func:`~guardagent.sandbox.zygote.run_in_zygote`: ("line", bytes), ("status",
        int), ("timeout", None) after killing the child, or ("eof", None).

    Raises:
        NoZygote: none is running yet. OSError: it cannot be reached.
    """
    path = running_path(runs_nice())
    if path is None:
        raise NoZygote("no zygote running in this process")
    request = run_request(source, refs, inputs, limits, facts)
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, path)
        deadline = time.monotonic() + limits.wall_seconds
        await loop.sock_sendall(sock, request)
        reply = Reply()
        try:
            while reply.wanted == "announce":
                if not await _readable(loop, sock.fileno(), deadline):
                    return reply.timed_out()
                with contextlib.suppress(BlockingIOError):
                    data, fds, _, _ = socket.recv_fds(sock, 65536, 1)
                    reply.announced(data, fds)
            while reply.wanted == "result" and reply.pipe is not None:
                if not await _readable(loop, reply.pipe, deadline):
                    return reply.timed_out()
                with contextlib.suppress(BlockingIOError):
                    reply.result(os.read(reply.pipe, 65536))
            if reply.ended is not None:
                return reply.ended
            return await _status(loop, sock, deadline, reply)
        except asyncio.CancelledError:
            kill(reply.pid)  # nobody will read its result: it must not run on to its deadline
            raise
        finally:
            reply.close()


async def _status(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, deadline: float, reply: Reply
) -> tuple[str, Any]:
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
        if not await _readable(loop, sock.fileno(), deadline):
            return reply.timed_out()
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            continue
        if not chunk:
            return "eof", None
        buf += chunk


async def _readable(loop: asyncio.AbstractEventLoop, fd: int, deadline: float) -> bool:
    """Whether `fd` becomes readable (data, EOF or hang-up) before the deadline."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return False
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        async with asyncio.timeout(remaining):
            await ready
        return True
    except TimeoutError:
        return False
    finally:
        loop.remove_reader(fd)
