"""`GuardClient.check` / `check_trace` return the typed `GuardDecision`, as `GuardAgent` does.

A host can swap a local guard for the service without rewriting how it reads decisions
(`decision.allowed`), dict access (`decision["allowed"]`) keeps working, and an answer whose
fields do not read as a decision is no decision (`ServiceError`: the caller denies). The
`*_raw` methods keep the standard-library-only path (the shell hook's) returning the JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.decision import GuardDecision
from guardagent.service.client import GuardClient, ServiceError

ANSWER: dict[str, Any] = {"status": 200, "body": b"{}"}


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 -- http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = ANSWER["body"]
        self.send_response(ANSWER["status"])
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _answer(status: int, body: Any) -> None:
    ANSWER.update(status=status, body=json.dumps(body).encode())


TEXT = st.text(max_size=40)
DECISIONS = st.builds(
    lambda allowed, reason, violations, unreadable, extra, status: (
        status,
        {
            "allowed": allowed,
            "label": int(not allowed),
            "reason": reason,
            "violations": violations,
            "unreadable": unreadable,
            "latency_ms": 1.5,
            "profile": "p",
            **extra,
        },
    ),
    st.booleans(),
    TEXT,
    st.one_of(
        st.lists(TEXT, max_size=3), st.dictionaries(TEXT, st.lists(TEXT, max_size=2), max_size=2)
    ),
    st.lists(st.fixed_dictionaries({"reason": TEXT, "detail": TEXT}), max_size=2),
    st.dictionaries(st.sampled_from(["a_newer_field", "served_by"]), TEXT, max_size=2),
    st.sampled_from([200, 503]),
).filter(lambda pair: pair[0] == 200 or not pair[1]["allowed"])


@settings(max_examples=60, deadline=None)
@given(answer=DECISIONS, trace=st.booleans())
def test_a_decision_comes_back_typed_and_still_reads_as_a_dict(
    url: str, answer: tuple[int, dict[str, Any]], trace: bool
) -> None:
    status, body = answer
    _answer(status, body)
    client = GuardClient(url)
    decision = (
        client.check_trace([{"role": "user", "content": "hi"}])
        if trace
        else client.check("in", "out")
    )
    assert isinstance(decision, GuardDecision)
    assert decision.allowed is body["allowed"] and decision.label == body["label"]
    assert decision["allowed"] is body["allowed"] and decision.get("reason") == body["reason"]
    assert decision.unreadable == body["unreadable"] and decision.violations == body["violations"]
    assert decision.get("a_field_no_decision_has", "absent") == "absent"
    raw = client.check_trace_raw([]) if trace else client.check_raw("in", "out")
    assert raw == body  # the JSON as the service sent it, for the hook


@pytest.mark.parametrize(
    "fields",
    [
        {"latency_ms": "fast"},
        {"unreadable": "all of it"},
        {"violations": 3},
        {"program_source": "the internet"},
        {"rules": [1]},
        {"reason": ["a"]},
    ],
)
def test_fields_that_do_not_read_as_a_decision_are_no_decision(
    url: str, fields: dict[str, Any]
) -> None:
    _answer(200, {"allowed": True, "label": 0, **fields})
    with pytest.raises(ServiceError, match="do not read as a decision"):
        GuardClient(url).check("in", "out")
    with pytest.raises(ServiceError):
        GuardClient(url).check_trace(trace="{}")


def test_mapping_access_names_what_a_decision_lacks() -> None:
    decision = GuardDecision(allowed=False, label=1, reason="r")
    assert decision["reason"] == "r" and decision.get("error") is None
    with pytest.raises(KeyError):
        decision["nope"]  # noqa: B018


def test_the_raw_path_needs_only_the_standard_library(url: str) -> None:
    _answer(200, {"allowed": True, "label": 0})
    script = (
        f"import json, sys\nfrom guardagent.service.client import GuardClient\n"
        f"c = GuardClient({url!r})\nc.check_raw('i', 'o')\nc.check_trace_raw(trace='{{}}')\n"
        "print(json.dumps([m for m in ('pydantic', 'click', 'langgraph') "
        "if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []
