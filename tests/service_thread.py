"""A guard service in this process (uvicorn in a thread, loopback, no database) for tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from guardagent.service.serve import server_config
from guardagent.service.settings import ServiceSettings
from tests.pg_server import free_port


@contextmanager
def serving(settings: ServiceSettings) -> Iterator[str]:
    """The service's base URL while the block runs; stopped (and joined) after it."""
    port = free_port()
    server = uvicorn.Server(server_config(settings, "127.0.0.1", port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "the service did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
