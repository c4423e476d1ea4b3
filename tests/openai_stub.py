"""A local OpenAI-compatible chat server for tests: scripted answers and injected faults.

It speaks just enough of `POST /v1/chat/completions` for `langchain-openai` (non-streaming):
the planner, coder and debugger prompts of GuardAgent are told apart by their system
message, so one stub serves a whole guard run. Faults (`fault=`) replace every answer:

- ``"500"``: HTTP 500 with an OpenAI-style error body (the client retries these);
- ``"timeout"``: the handler sleeps longer than the client's timeout before answering;
- ``"malformed"``: HTTP 200 with a body that is not JSON;
- ``"empty"``: a well-formed completion whose content is "".

Every request is counted (and its JSON body kept) so tests can prove retries are bounded.
A `responder` (request body -> answer text) replaces the scripted GuardAgent answers, for
other prompts (e.g. policy extraction, which wants JSON per document section).
Runs in a daemon thread on 127.0.0.1 with an OS-chosen port; `stop()` shuts it down.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PLAN = (
    "1. User: read the user information from the agent input only.\n"
    "2. Action: the task is booking a hotel.\n"
    "3. Rules: booking a hotel requires age 18 or over.\n"
    "4. Decision: deny when the user is under 18, else allow."
)
PROGRAM = """Here is the program.
```python
user = parse_user_info(agent_input)
age = user.get("age")
if age is None or age < 18:
    deny(["User aged under 18 cannot book a hotel"], "the user is under 18 or of unknown age")
else:
    allow("the user is an adult")
```"""
DIAGNOSIS = "The program used a key that does not exist; read 'age' from parse_user_info."


class OpenAIStub:
    """An OpenAI-compatible server on loopback answering from a script.

    Args:
        fault: None for scripted answers, or "500", "timeout", "malformed", "empty".
        programs: Coder answers in order (the last one repeats).
        hang_seconds: How long a "timeout" request sleeps before answering.
        responder: When given, computes every answer from the request body instead.
    """

    def __init__(
        self,
        fault: str | None = None,
        *,
        programs: list[str] | None = None,
        hang_seconds: float = 5.0,
        responder: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.fault = fault
        self.responder = responder
        self.programs = list(programs or [PROGRAM])
        self.hang_seconds = hang_seconds
        self.requests: list[dict[str, Any]] = []
        self.roles: list[str] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        """The port the OS gave the server."""
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """What to pass as `--base-url`."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def count(self) -> int:
        """Requests received so far."""
        with self._lock:
            return len(self.requests)

    def start(self) -> OpenAIStub:
        """Serve in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; hanging handlers wake up and exit."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answers ---------------------------------------------------------------------------

    @staticmethod
    def role_of(body: dict[str, Any]) -> str:
        """Which GuardAgent prompt this is: planner, coder or debugger."""
        system = next(
            (
                m.get("content", "")
                for m in body.get("messages", [])
                if m.get("role") in ("system", "developer")
            ),
            "",
        )
        text = system if isinstance(system, str) else json.dumps(system)
        if "You debug" in text:
            return "debugger"
        if "You write guardrail code" in text:
            return "coder"
        return "planner"

    def _content(self, role: str, body: dict[str, Any]) -> str:
        if self.responder is not None:
            return self.responder(body)
        if role == "planner":
            return PLAN
        if role == "debugger":
            return DIAGNOSIS
        coder_calls = self.roles.count("coder")
        return self.programs[min(coder_calls - 1, len(self.programs) - 1)]

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> str:
        role = self.role_of(body)
        with self._lock:
            self.requests.append(body)
            self.roles.append(role)
            self.headers.append(headers)
            return self._content(role, body)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # keep test output clean

            def _send(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, b'{"error": {"message": "bad json"}}')
                    return
                content = stub._record(body, {k.lower(): v for k, v in self.headers.items()})
                if stub.fault == "500":
                    self._send(
                        500,
                        b'{"error": {"message": "stub: internal error", "type": "server_error"}}',
                    )
                    return
                if stub.fault == "timeout":
                    stub._stopping.wait(stub.hang_seconds)
                if stub.fault == "malformed":
                    self._send(200, b'{"id": "chatcmpl-x", "choices": [ {"message": oops')
                    return
                if stub.fault == "empty":
                    content = ""
                reply = {
                    "id": f"chatcmpl-{stub.count}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model", "stub"),
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": content},
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }
                self._send(200, json.dumps(reply).encode("utf-8"))

        return Handler
