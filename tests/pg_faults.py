"""Faults of a test's PostgreSQL server: stopped and started again, or stalled and resumed.

For a server :func:`tests.pg_server.running_postgres` started (looked up by its URL): `pg_ctl`
stops and starts it on the same folder and port; a stall stops every one of its processes
(the postmaster and its children, found by PID in /proc) with SIGSTOP, as a frozen disk or
VM does, and SIGCONT resumes exactly those.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from tests.pg_server import SERVERS


def _server(url: str) -> dict[str, Any]:
    return SERVERS[url]


def _pg_ctl(url: str, *args: str) -> None:
    server = _server(url)
    done = subprocess.run(
        [server["pg_ctl"], "-D", str(server["data"]), *args],
        env=server["env"],
        cwd=server["cwd"],
        capture_output=True,
        text=True,
        timeout=90,
        **server["kw"],
    )
    if done.returncode:
        raise RuntimeError(f"pg_ctl {args[-1]} failed: {done.stderr.strip()[-500:]}")


def stop_postgres(url: str) -> None:
    """Stop the server (fast: sessions are cut, as in an outage); its data stays."""
    _pg_ctl(url, "-m", "fast", "-w", "-t", "60", "stop")


def start_postgres(url: str) -> None:
    """Start the stopped server again, on its folder and port."""
    server = _server(url)
    _pg_ctl(url, "-o", server["options"], "-l", str(server["log"]), "-w", "-t", "60", "start")


def _postmaster(url: str) -> int:
    pid_file = Path(_server(url)["data"]) / "postmaster.pid"
    return int(pid_file.read_text().split()[0])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@contextmanager
def stalled(url: str) -> Iterator[None]:
    """Every process of the server stopped (SIGSTOP) for the block, then resumed (SIGCONT)."""
    master = _postmaster(url)
    pids = [master, *_children(master)]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
