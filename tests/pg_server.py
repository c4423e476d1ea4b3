"""A throwaway PostgreSQL server from the machine's binaries, and guard-service replicas.

`initdb` + `pg_ctl` in a temp folder, listening on a free loopback port only (no Unix socket
outside the folder), trust auth for one user. Under root (CI containers) the server runs as
the `postgres` user (else `nobody`): PostgreSQL refuses to run as root. Replicas are
`python -m guardagent.service` subprocesses, stopped by PID.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.servers import free_port
from tests.servers import wait_ready as wait_ready_at

__all__ = ["free_port"]  # re-exported: the service tests import it from here

REPO = Path(__file__).resolve().parent.parent


SERVERS: dict[str, dict[str, object]] = {}
"""What :func:`running_postgres` started, by URL: how to stop and start it again
(:mod:`tests.pg_faults`)."""


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries here (or they would not start): the caller skips."""


def pg_bin() -> Path | None:
    """The folder of `initdb` and `pg_ctl`: $GUARDAGENT_PG_BIN, Debian's versioned folders, PATH."""
    candidates = [os.environ.get("GUARDAGENT_PG_BIN", "")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    found = shutil.which("pg_ctl")
    candidates.append(str(Path(found).parent) if found else "")
    for folder in filter(None, candidates):
        if (Path(folder) / "initdb").is_file() and (Path(folder) / "pg_ctl").is_file():
            return Path(folder)
    return None


def _run_as() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    raise PostgresUnavailable("running as root and no postgres/nobody user to run PostgreSQL as")


@contextmanager
def running_postgres(root: Path, *, durable: bool = False) -> Iterator[str]:
    """A PostgreSQL server in `root` for the block; yields its URL.

    Args:
        durable: Keep fsync and synchronous commit (benchmarks); tests turn them off.

    Raises:
        PostgresUnavailable: no binaries, or the server did not start (with its log).
    """
    folder = pg_bin()
    if folder is None:
        raise PostgresUnavailable(
            "PostgreSQL binaries (initdb, pg_ctl) not found: install "
            "postgresql or set GUARDAGENT_PG_BIN"
        )
    ids = _run_as()
    # Its own folder in the system temp dir: pytest's folders are private to root, and the
    # server's user must reach its data.
    home = Path(tempfile.mkdtemp(prefix="guardagent-pg-"))
    data, log = home / "pgdata", root / "postgres.log"
    if ids is not None:
        os.chown(home, *ids)
    kw: dict[str, object] = (
        {} if ids is None else {"user": ids[0], "group": ids[1], "extra_groups": []}
    )
    env = {"PATH": os.environ.get("PATH", ""), "LC_ALL": "C"}
    init = subprocess.run(
        [
            str(folder / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            "guard",
            "-E",
            "UTF8",
            "--no-sync",
        ],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        **kw,
    )  # type: ignore[call-overload]
    if init.returncode:
        raise PostgresUnavailable(f"initdb failed: {init.stderr.strip()[-500:]}")
    port = free_port()
    options = f"-p {port} -h 127.0.0.1 -k {data} -c max_connections=200"
    if not durable:
        options += " -F -c synchronous_commit=off -c full_page_writes=off"
    server_log = home / "postgres.log"
    start = subprocess.run(
        [
            str(folder / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(server_log),
            "-w",
            "-t",
            "30",
            "start",
        ],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        **kw,
    )  # type: ignore[call-overload]
    if start.returncode:
        tail = (
            server_log.read_text(errors="replace")[-800:] if server_log.exists() else start.stderr
        )
        raise PostgresUnavailable(f"PostgreSQL did not start: {tail.strip()}")
    url = f"postgresql://guard@127.0.0.1:{port}/postgres"
    SERVERS[url] = {
        "pg_ctl": str(folder / "pg_ctl"),
        "data": data,
        "options": options,
        "log": server_log,
        "env": env,
        "kw": kw,
        "cwd": home,
    }
    try:
        yield url
    finally:
        SERVERS.pop(url, None)
        pid_file = data / "postmaster.pid"
        pid = int(pid_file.read_text().split()[0]) if pid_file.exists() else None
        if pid is not None:
            os.kill(pid, signal.SIGQUIT)  # immediate shutdown, by the postmaster's PID
            for _ in range(200):
                if not _alive(pid):
                    break
                time.sleep(0.05)
        if server_log.exists():
            shutil.copy(server_log, log)
        shutil.rmtree(home, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie nobody reaps, as under a container's init, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def start_replica(port: int, env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """One service replica on 127.0.0.1:`port` (not waited for: see :func:`wait_ready`)."""
    # no drain unless the test asks for one: a stopped replica exits at once
    full = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "GUARDAGENT_DRAIN_SECONDS": "0", **env}
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "guardagent.service",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
            ],
            env=full,
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_ready(proc: subprocess.Popen[bytes], port: int, log: Path, timeout: float = 60) -> None:
    """Until `/readyz` answers 200; fails with the replica's log if it exits or stays down."""
    wait_ready_at(f"http://127.0.0.1:{port}/readyz", proc, log, timeout=timeout)


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    """Signal the replica by PID and reap it (SIGKILL if it does not exit in `timeout`)."""
    if proc.poll() is None:
        os.kill(proc.pid, sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    return int(proc.returncode)
