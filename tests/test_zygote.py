"""The pre-warmed zygote: which toolboxes it serves, and that it trusts nothing around it."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import socket
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from guardagent.profiles import load_profile
from guardagent.readers import user_facts
from guardagent.sandbox.process import SandboxLimits, run_program
from guardagent.sandbox.zygote import _Zygote, _zygote, runs_nice, toolbox_refs
from guardagent.tools.registry import Toolbox, ToolSpec

PROGRAM = "deny([str(parse_user_info(agent_input).get('age'))], 'age')"
EVENT = "Task: x\nUser information:\n   age: 30"


def test_wrapped_builtin_is_not_replaced_by_the_original() -> None:
    """A user's wrapper that reports a built-in's name must run as written (fork path)."""

    @functools.wraps(user_facts.parse_user_info)
    def stricter(agent_input: str) -> dict[str, Any]:
        return {"age": -1}

    tools = Toolbox([ToolSpec("parse_user_info", stricter, "web")])
    assert toolbox_refs(tools) is None
    result = run_program(PROGRAM, tools, EVENT, "")
    assert result["ok"] and result["verdict"]["violations"] == ["-1"]  # type: ignore[index]


def test_builtins_are_served_and_decide_like_the_caller() -> None:
    tools = load_profile("mind2web-sc").tools()
    assert toolbox_refs(tools) is not None
    result = run_program(PROGRAM, tools, EVENT, "")
    assert result["ok"] and result["verdict"]["violations"] == ["30"]  # type: ignore[index]


def test_modules_in_the_working_directory_are_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `select.py` (or `json.py`) where the guard runs must not execute in the zygote."""
    marker = tmp_path / "imported"
    (tmp_path / "select.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (tmp_path / "json.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(tmp_path)
    zygote = _zygote(runs_nice())  # the one that forks one-run children
    zygote.stop()  # force a fresh zygote started from this directory
    tools = load_profile("mind2web-sc").tools()
    result = run_program(PROGRAM, tools, EVENT, "")
    assert result["ok"], result
    assert not marker.exists()


def test_zygote_socket_is_private() -> None:
    zygote = _zygote()
    assert os.stat(zygote.path).st_mode & 0o077 == 0
    assert os.stat(zygote.dir).st_mode & 0o077 == 0


# --------------------------------------------------------------------------- issue 11, item 7


def _exchange(path: str, request: bytes, timeout: float = 5.0) -> list[dict[str, Any]]:
    """Send one raw request line to a zygote socket; the JSON lines of its answer, in order.

    The announcement's line, then what the child wrote to the pipe passed with it (until the
    pipe ends), then the rest of the connection until EOF.
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(request)
        data, fds, _, _ = socket.recv_fds(sock, 65536, 1)
        while data and b"\n" not in data:
            data += sock.recv(65536)
        announce, _, rest = data.partition(b"\n")
        result = b""
        for fd in fds:
            with os.fdopen(fd, "rb") as pipe:
                result += pipe.read()
        while chunk := sock.recv(65536):
            rest += chunk
    lines = [announce, *result.splitlines(), *rest.splitlines()]
    return [json.loads(line) for line in lines if line.strip()]


def _request(source: str, limits: SandboxLimits | dict[str, Any], **extra: Any) -> bytes:
    tools = toolbox_refs(load_profile("mind2web-sc").tools())
    body = {
        "source": source,
        "tools": tools,
        "input": EVENT,
        "output": "",
        "limits": limits if isinstance(limits, dict) else asdict(limits),
        **extra,
    }
    return json.dumps(body).encode() + b"\n"


def test_the_callers_import_path_does_not_reach_the_zygote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard-library names on the caller's sys.path (a `python -m` cwd) are not imported."""
    marker = tmp_path / "imported"
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    for name in ("socket", "json", "select", "signal", "tempfile"):
        (shadow / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r})\nraise ImportError('shadowed')\n"
        )
    monkeypatch.setattr(sys, "path", [str(shadow), *sys.path])
    try:
        zygote: _Zygote | None = _Zygote()
    except OSError:
        zygote = None
    try:
        assert not marker.exists(), (
            f"the zygote imported {marker.read_text()} from the caller's path"
        )
        assert zygote is not None
        announce, result, *_ = _exchange(zygote.path, _request(PROGRAM, SandboxLimits()))
        assert result["v"]["violations"] == ["30"], result
        with open(f"/proc/{zygote.proc.pid}/environ", "rb") as env:
            assert env.read().strip(b"\0") == b""  # started with no environment at all
    finally:
        if zygote is not None:
            zygote.stop()


def test_requests_may_lower_limits_but_never_raise_them() -> None:
    path = _zygote().path
    for field, value in (
        ("memory_mb", 10**6),
        ("cpu_seconds", 3600),
        ("max_output_chars", 10**9),
        ("max_source_chars", 10**9),
        ("wall_seconds", 10**6),
    ):
        limits = {**asdict(SandboxLimits()), field: value}
        [announce, result] = _exchange(path, _request(PROGRAM, limits))
        assert announce == {"pid": 0}, "the zygote forked a child for a raised limit"
        assert result["v"] is None and field in result["e"], result
    for bad in (
        {**asdict(SandboxLimits()), "cpu_seconds": "5"},
        {"memory_mb": 64},
        {**asdict(SandboxLimits()), "memory_mb": -1},
    ):
        [announce, result] = _exchange(path, _request(PROGRAM, bad))
        assert announce == {"pid": 0} and result["e"].startswith("SandboxError"), result
    lower = SandboxLimits(wall_seconds=2, cpu_seconds=1, memory_mb=64, max_output_chars=100)
    announce, result, *_ = _exchange(path, _request(PROGRAM, lower))  # then {"x": status}
    assert announce["pid"] > 0 and result["v"]["violations"] == ["30"]
    # The caller refuses raised limits too, before any child exists.
    result2 = run_program(
        PROGRAM, load_profile("mind2web-sc").tools(), EVENT, "", SandboxLimits(memory_mb=10**6)
    )
    assert not result2["ok"] and "memory_mb" in (result2["error"] or "")


def test_a_stalled_connection_does_not_block_other_runs() -> None:
    tools = load_profile("mind2web-sc").tools()
    assert run_program(PROGRAM, tools, EVENT, "")["ok"]  # the zygote is up and warm
    path = _zygote().path
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stalled:
        stalled.connect(path)
        stalled.sendall(b'{"source": "allow()", "tools": [')  # half a line, then nothing
        time.sleep(0.2)  # the zygote has accepted it by now
        results = [run_program(PROGRAM, tools, EVENT, "") for _ in range(3)]
        # The zygote drops a connection whose line is not complete in 10 s: still open now,
        # so the runs were served before it, not after it (an order, not a time).
        stalled.setblocking(False)
        try:
            still_open = stalled.recv(1) != b""
        except BlockingIOError:
            still_open = True
        except OSError:
            still_open = False
    assert all(r["ok"] for r in results), results
    assert still_open, "the runs were served only once the stalled connection was dropped"


def _read_environ() -> str:
    """Trusted toolbox function: this process's initial environment block, as the kernel shows it."""
    os.close(0)  # the child may hold 4 descriptors; 0 is /dev/null
    fd = os.open("/proc/self/environ", os.O_RDONLY)
    try:
        return os.read(fd, 1 << 20).replace(b"\0", b"").decode("utf-8", "replace")
    finally:
        os.close(fd)


def test_caller_fork_children_have_an_empty_environment_block() -> None:
    tools = Toolbox([ToolSpec("read_environ", _read_environ, "test")])
    assert toolbox_refs(tools) is None  # not a built-in: forked from this process
    assert Path("/proc/self/environ").read_bytes().strip(b"\0")  # we do have one
    result = run_program(
        "e = read_environ()\ndeny(['n=' + str(len(e)), e[:80]], 'env')", tools, "", ""
    )
    assert result["verdict"] is not None, result
    assert result["verdict"]["violations"][0] == "n=0", result["verdict"]


def test_zygote_children_have_an_empty_environment_block() -> None:
    """Read a running zygote child's /proc/<pid>/environ from here."""
    path = _zygote().path
    limits = SandboxLimits(wall_seconds=5, cpu_seconds=3)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(path)
        sock.sendall(_request("while True:\n    pass", limits))
        pid = json.loads(sock.recv(4096).split(b"\n")[0])["pid"]
        try:
            deadline = time.monotonic() + 2
            block = b"?"
            while time.monotonic() < deadline:
                with open(f"/proc/{pid}/environ", "rb") as env:
                    block = env.read().strip(b"\0")
                if not block:
                    break
                time.sleep(0.01)
            assert block == b"", block[:200]
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- CPU priority


def test_one_run_children_come_from_a_zygote_below_the_guards_priority(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An unverified program's child runs niced; the workers' zygote keeps our priority."""
    from guardagent.sandbox import zygote as zygote_module

    monkeypatch.setenv("GUARDAGENT_SANDBOX_NICE", "7")
    zygote_module.stop_all()  # no workers left by earlier tests
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    tools = load_profile("mind2web-sc").tools()
    assert run_program(PROGRAM, tools, EVENT, "")["ok"]
    runs = zygote_module.running_path(7)
    assert runs is not None and runs != zygote_module.running_path(0)
    assert os.getpriority(os.PRIO_PROCESS, _zygote(7).proc.pid) == min(19, ours + 7)
    assert os.getpriority(os.PRIO_PROCESS, _zygote(0).proc.pid) == ours

    def children(pid: int) -> list[str]:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()

    deadline = time.monotonic() + 10
    while not children(_zygote(7).proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert children(_zygote(7).proc.pid)  # its spare, forked ahead
    time.sleep(0.2)
    assert not children(_zygote(0).proc.pid)  # the workers' zygote keeps none
    _zygote(7).stop()


@pytest.mark.parametrize("value", ["high", "1.5"])
def test_a_niceness_that_is_not_an_integer_is_refused_when_the_guard_is_built(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    from guardagent import GuardAgent

    monkeypatch.setenv("GUARDAGENT_SANDBOX_NICE", value)
    with pytest.raises(ValueError, match="GUARDAGENT_SANDBOX_NICE"):
        GuardAgent("mind2web-sc")
    monkeypatch.setenv("GUARDAGENT_SANDBOX_NICE", "99")  # clamped, not refused
    assert runs_nice() == 19


# --------------------------------------------------------------------------- spares


def _children(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()


def _wait_for(condition: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(condition())


def test_a_batch_hint_readies_as_many_spares_and_each_run_still_gets_a_fresh_process() -> None:
    """`expect_runs(n)` (sent by `acheck_many`) makes the one-run zygote fork n spares while
    idle; a burst then uses n distinct processes, each for one run only."""
    from guardagent.sandbox.zygote import MAX_SPARES, SPARES, expect_runs, stop_all

    stop_all()  # a fresh zygote: no demand learnt from earlier tests' bursts
    tools = load_profile("mind2web-sc").tools()
    assert run_program(PROGRAM, tools, EVENT, "")["ok"]  # the zygote runs
    zygote = _zygote(runs_nice())
    assert _wait_for(lambda: len(_children(zygote.proc.pid)) >= SPARES)
    assert len(_children(zygote.proc.pid)) < 12
    assert expect_runs(12)
    assert _wait_for(lambda: len(_children(zygote.proc.pid)) >= 12)
    time.sleep(0.2)
    assert len(_children(zygote.proc.pid)) <= 12  # no more than the hint asked for
    assert expect_runs(10_000)  # a hint is capped
    assert _wait_for(lambda: len(_children(zygote.proc.pid)) >= MAX_SPARES)
    time.sleep(0.2)
    assert len(_children(zygote.proc.pid)) <= MAX_SPARES
    pids = []
    for _ in range(6):
        announce, result, *_ = _exchange(zygote.path, _request(PROGRAM, SandboxLimits()))
        pids.append(announce["pid"])
        assert result["v"]["violations"] == ["30"]
    assert len(set(pids)) == 6  # one process per run, spares or not
    zygote.stop()


def test_a_hint_is_ignored_without_a_zygote_and_for_a_single_run() -> None:
    from guardagent.sandbox import zygote as zygote_module

    zygote_module.stop_all()
    assert zygote_module.expect_runs(8) is False  # nothing runs yet: nothing to tell
    assert zygote_module.expect_runs(1) is False


@pytest.mark.parametrize(
    "hint",
    [
        b'{"spares": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",  # too deep for json
        b'{"spares": "32"}\n',
        b'{"spares": -5}\n',
        b'{"spares"\n',
        b'{"spares": 1e999}\n',
    ],
)
def test_a_malformed_hint_is_ignored_and_the_zygote_serves_on(hint: bytes) -> None:
    tools = load_profile("mind2web-sc").tools()
    assert run_program(PROGRAM, tools, EVENT, "")["ok"]
    zygote = _zygote(runs_nice())
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(zygote.path)
        sock.sendall(hint)
        assert sock.recv(4096) == b""  # hung up without an answer
    assert zygote.proc.poll() is None
    result = run_program(PROGRAM, tools, EVENT, "")
    assert result["ok"] and result["verdict"]["violations"] == ["30"]  # type: ignore[index]
    assert _zygote(runs_nice()) is zygote  # the same process served it


# --------------------------------------------------------------------------- the reply's pipe


def test_a_caller_that_hangs_up_has_its_child_killed() -> None:
    """The zygote watches a run's connection: a caller gone before the result (a cancelled
    task, a dead process) leaves no child running an untrusted program to its limits."""
    path = _zygote(runs_nice()).path
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(path)
        sock.sendall(_request("while True:\n    pass", SandboxLimits(wall_seconds=30)))
        data, fds, _, _ = socket.recv_fds(sock, 4096, 1)
        pid = json.loads(data.split(b"\n")[0])["pid"]
        for fd in fds:
            os.close(fd)
        assert pid > 0 and Path(f"/proc/{pid}").exists()
    assert _wait_for(lambda: not Path(f"/proc/{pid}").exists(), 5.0), "the child runs on"


def test_a_caller_at_its_descriptor_limit_gets_an_error_not_a_crash() -> None:
    """When this process cannot take the result's pipe, the run is refused as such (and its
    child killed), not reported as a child that crashed."""
    import subprocess

    script = (
        "import os, resource\n"
        "from guardagent.profiles import load_profile\n"
        "from guardagent.sandbox import azygote, zygote\n"
        "from guardagent.sandbox.process import SandboxLimits, _ended, ended_parts\n"
        f"PROGRAM, EVENT = {PROGRAM!r}, {EVENT!r}\n"
        "refs = zygote.toolbox_refs(load_profile('mind2web-sc').tools())\n"
        "assert azygote.run_in_zygote(PROGRAM, refs, (EVENT, ''), SandboxLimits())[0] == 'line'\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "held = []\n"
        "try:\n"
        "    while True: held.append(os.open('/dev/null', os.O_RDONLY))\n"
        "except OSError: pass\n"
        "os.close(held.pop())  # one free descriptor: the connection's socket\n"
        "ended = azygote.run_in_zygote(PROGRAM, refs, (EVENT, ''), SandboxLimits())\n"
        "print(_ended(*ended_parts(ended), SandboxLimits())[1])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(Path(__file__).resolve().parents[1]),
    )
    assert "result pipe was not received" in out.stdout, (out.stdout, out.stderr[-2000:])
