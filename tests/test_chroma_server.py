"""Memory shared between processes through a Chroma server (`MemoryStore(..., url=...)`).

Starts `chroma run` on a free loopback port, writes one demonstration from each of two
separate processes, reads both from a third, then stops the server by its process group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.servers import free_port, stop_group, wait_ready

CHROMA = Path(sys.executable).parent / "chroma"
REPO = Path(__file__).resolve().parent.parent

WRITER = """
import sys
from guardagent.memory_store.store import Demonstration, MemoryStore, demonstration_id

url, who = sys.argv[1], sys.argv[2]
demo = Demonstration(
    id="", agent_input=f"Task: event written by {who}", agent_output=f"output of {who}",
    plan="p", code="allow('ok')", label=0, details=[], request_fingerprint="shared-req",
    verified=True,
)
demo["id"] = demonstration_id(demo)
MemoryStore("shared-memory", url=url).add([demo])
print(demo["id"])
"""

READER = """
import json, sys
from guardagent.memory_store.store import MemoryStore

store = MemoryStore("shared-memory", url=sys.argv[1])
found = store.search("Task: event written by", "output of", 5, request="shared-req")
print(json.dumps({"count": store.count(),
                  "inputs": sorted(d["agent_input"] for d in found),
                  "verified": [d["verified"] for d in found]}))
"""


@pytest.fixture
def chroma_url(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "chroma.log").open("wb")
    proc = subprocess.Popen(
        [
            str(CHROMA),
            "run",
            "--path",
            str(tmp_path / "db"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{url}/api/v2/heartbeat", proc, tmp_path / "chroma.log", timeout=30)
        yield url
    finally:
        left = stop_group(proc)
        log.close()
        assert not left, "chroma left processes behind"


KEY = "shared-memory key of this deployment (test)"


def _start(code: str, *args: str, key: str | None = KEY) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "ANONYMIZED_TELEMETRY": "False"}
    env.pop("GUARDAGENT_MEMORY_KEY", None)
    if key is not None:  # a shared memory trusts only records tagged with the deployment's key
        env["GUARDAGENT_MEMORY_KEY"] = key
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out.strip().splitlines()[-1]


def test_two_writer_processes_and_a_reader_share_one_chroma_server(chroma_url: str):
    # The two writers run at the same time, as two guard workers sharing one memory would.
    writers = [_start(WRITER, chroma_url, f"writer-{n}") for n in (1, 2)]
    first, second = (_result(w) for w in writers)
    assert first != second
    seen = json.loads(_result(_start(READER, chroma_url)))
    assert seen["count"] == 2
    assert seen["inputs"] == ["Task: event written by writer-1", "Task: event written by writer-2"]
    assert seen["verified"] == [False, False]  # never read from the store; no verifier here
    # A client without the key, or with another one, writes records nobody trusts and
    # trusts none of the deployment's.
    _result(_start(WRITER, chroma_url, "intruder", key=None))
    _result(_start(WRITER, chroma_url, "other-key", key="some other deployment's key"))
    again = json.loads(_result(_start(READER, chroma_url)))
    assert again["count"] == 4 and again["inputs"] == seen["inputs"]
    keyless = json.loads(_result(_start(READER, chroma_url, key=None)))
    assert keyless["count"] == 4 and keyless["inputs"] == []
