"""Starting a test's server and waiting for it: one way, for every test that starts one.

A test server is a subprocess on a free loopback port; a test waits until one URL of it
answers (failing with the server's log when the process exits first or the wait runs out),
and stops it by its process group when it started one, checking that none of it is left.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any


class ServerNotReady(RuntimeError):
    """The server exited, or did not answer in time; the message ends with its log."""


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(log: Path | None) -> str:
    if log is None or not log.exists():
        return ""
    return log.read_text(errors="replace")[-2000:]


def wait_ready(
    url: str,
    proc: subprocess.Popen[Any],
    log: Path | None = None,
    timeout: float = 60,
    ready: Callable[[int], bool] = lambda status: status == 200,
    poll: float = 0.1,
) -> None:
    """Until GET `url` answers with a status `ready` accepts.

    Raises:
        ServerNotReady: the process exited, or `timeout` seconds passed (a generous bound for
            a loaded machine, not a measure: the test checks outcomes, never this time).
    """
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise ServerNotReady(f"{url}: server exited {proc.returncode}: {_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if ready(reply.status):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise ServerNotReady(f"{url}: not ready in {timeout} s: {_tail(log)}")
        time.sleep(poll)


def group_members(pgid: int) -> list[int]:
    """PIDs whose process group is `pgid` (read from /proc, so zombies count too)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid:  # fields: state, ppid, pgrp, ...
            members.append(int(entry.name))
    return members


def stop_group(proc: subprocess.Popen[Any], grace: float = 15) -> list[int]:
    """SIGTERM the group `proc` leads (`start_new_session=True`), SIGKILL it after `grace` s.

    Returns:
        The group's members still there after a further 10 s (the caller asserts it empty).
    """
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        os.killpg(pgid, signal.SIGKILL)
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + 10
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = group_members(pgid)
    if left:
        os.killpg(pgid, signal.SIGKILL)  # leave nothing running, then report it
    return left
