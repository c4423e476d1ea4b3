"""The zygote's client on the event loop: one run with no thread waiting for it.

The same protocol as :func:`guardagent.sandbox.zygote.run_in_zygote` (a request line; the
child's pid; its result, or its death status from the zygote), read with the loop's socket
calls. The caller still enforces the wall-clock limit by killing the child at its deadline,
and a caller that gives up (its task cancelled) kills it at once instead of leaving it to
run until then. Only a zygote already running is used: starting one blocks for a while, so
the first run of a process takes the threaded path, which starts it.
"""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

from guardagent.sandbox.zygote import kill, read_reply, run_request, running_path, runs_nice


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
        pid: int | None = None
        buf = bytearray()
        try:
            while True:
                end = buf.find(b"\n")
                if end >= 0:
                    line, buf = bytes(buf[:end]), buf[end + 1 :]
                    pid, ended = read_reply(line, pid)
                    if ended is not None:
                        return ended
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    kill(pid)
                    return "timeout", None
                try:
                    async with asyncio.timeout(remaining):
                        chunk = await loop.sock_recv(sock, 65536)
                except TimeoutError:
                    kill(pid)
                    return "timeout", None
                if not chunk:
                    return "eof", None
                buf += chunk
        except asyncio.CancelledError:
            kill(pid)  # nobody will read its result: it must not run on to its deadline
            raise
