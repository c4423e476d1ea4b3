"""A deadline for each request head, and a cap on connections still waiting for one.

uvicorn times out an idle kept-alive connection and nothing else before the app runs: a
client sending its request line and headers a byte every few seconds holds its connection
(and a file descriptor) as long as it likes, before any token is checked. Enough of them
exhaust the replica's descriptors, and every honest caller is refused.

So the replica's HTTP protocol is uvicorn's own with two bounds on the wait for a head (from
the connection, or from the previous answer on a kept-alive connection):

- it lasts at most `header_seconds`; then the connection gets 408 (if it sent anything) and
  is closed;
- at most `max_pending_connections` wait at once; one more closes the one waiting longest,
  so slow clients shed each other while a client whose head arrives at once gets in.

The app checks the token as soon as the head is in, before reading any body (whose time
`body_seconds` bounds), so this caps the connections that are not yet authenticated.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

_LATE = (
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n"
    b"Content-Type: text/plain\r\n\r\n"
)
_HOOKS = ("connection_made", "data_received", "connection_lost", "on_response_complete")


def head_bounded(seconds: float, limit: int, base: type[Any] = AutoHTTPProtocol) -> type[Any]:
    """An HTTP protocol class for `uvicorn.Config(http=...)` bounding the wait for heads.

    Args:
        seconds: How long a request head may take to arrive.
        limit: How many connections may wait for their head at once (this server's).
        base: uvicorn's protocol (httptools' or h11's, as uvicorn picks it).

    Raises:
        TypeError: a protocol without the hooks this relies on (a uvicorn that changed): the
            replica does not start rather than serve unbounded.
    """
    missing = [name for name in _HOOKS if not callable(getattr(base, name, None))]
    if missing:
        raise TypeError(f"{base.__name__} lacks {', '.join(missing)}: cannot bound request heads")
    waiting: dict[Any, None] = {}  # the connections waiting for a head, longest first

    class HeadBounded(base):  # type: ignore[misc]
        _head_timer: asyncio.TimerHandle | None = None
        _head_cycle: Any = None
        _head_started = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()

        def data_received(self, data: bytes) -> None:
            if self._head_timer is not None:
                self._head_started = True
            super().data_received(data)
            # uvicorn makes a new cycle once a whole head is in (both of its parsers)
            if self._head_timer is not None and self.cycle is not self._head_cycle:
                self._head_done()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            cycle = self.cycle
            if not self.transport.is_closing() and (cycle is None or cycle.response_complete):
                self._await_head()  # the next head on this kept-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_done()
            super().connection_lost(exc)

        def _await_head(self) -> None:
            self._head_done()
            self._head_cycle, self._head_started = self.cycle, False
            self._head_timer = self.loop.call_later(seconds, self._head_late)
            waiting[self] = None
            while len(waiting) > limit:
                next(iter(waiting))._head_late()

        def _head_done(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            waiting.pop(self, None)

        def _head_late(self) -> None:
            started = self._head_started
            self._head_done()
            if not self.transport.is_closing():
                if started:
                    self.transport.write(_LATE)
                self.transport.close()

    return HeadBounded
