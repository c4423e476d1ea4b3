"""HTTP/1.1 for the guard service's client: one request per connection, standard library only.

A shell hook pays for every module it imports. `http.client` pulls in the `email` package
(its header parser) and `ssl`, about a quarter of the hook's start-up; a decision request
needs neither for ``http://``: one request, ``Connection: close``, a status line, headers and
a body framed by ``Content-Length``, chunks, or the end of the connection. So ``http://`` is
spoken here over a socket, and ``https://`` goes through `http.client` (imported then).

The answer is bounded (:data:`MAX_HEADER_BYTES`, :data:`MAX_BODY_BYTES`) and anything that is
not HTTP/1.x is a :class:`WireError`: the client treats it as no decision (fail closed).
"""

from __future__ import annotations

import contextlib
import io
import socket
import time
from collections.abc import Mapping

TYPE_CHECKING = False  # not typing's: the hook's path imports no typing (its ~2.5 ms)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

MAX_HEADER_BYTES = 64 * 1024
"""Status line and headers together; a longer head is not an answer of the service."""
MAX_BODY_BYTES = 256 * 1024 * 1024
"""A decision is kilobytes; a body over this is refused rather than read."""


class WireError(OSError):
    """The answer is not HTTP/1.x this client reads (or the request cannot be written)."""


def exchange(
    scheme: str,
    host: str,
    port: int | None,
    method: str,
    target: str,
    body: bytes | None,
    headers: Mapping[str, str],
    timeout: float,
) -> tuple[int, dict[str, str], bytes]:
    """Send one request and read its answer: (status, headers with lower-case names, body).

    Raises:
        OSError: the service was not reached, or the connection broke.
        WireError: the answer (or a header value given) is not HTTP this client reads.
    """
    for name, value in headers.items():
        if any(ch in value or ch in name for ch in "\r\n\x00"):
            raise WireError(f"the header {name!r} holds a line break or NUL")
    if scheme == "https":
        return _https(host, port, method, target, body, headers, timeout)
    authority = f"[{host}]" if ":" in host else host
    if port is not None:
        authority += f":{port}"
    head = [
        f"{method} {target or '/'} HTTP/1.1",
        f"Host: {authority}",
        "Connection: close",
        f"Content-Length: {len(body or b'')}",
    ]
    head += [f"{name}: {value}" for name, value in headers.items()]
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace") + (body or b"")
    # an ASCII host as bytes: a str host makes getaddrinfo import the idna codec (~1 ms)
    address = host.encode("ascii") if host.isascii() else host
    deadline = time.monotonic() + timeout
    with socket.create_connection((address, port or 80), timeout=timeout) as sock:  # type: ignore[arg-type]
        try:
            _send(sock, request, deadline)
        except OSError as exc:  # a reset or broken pipe: the service may have answered first
            try:
                with io.BufferedReader(_Until(sock, deadline)) as answer:
                    return read_response(answer)
            except OSError:
                raise exc from None
        with io.BufferedReader(_Until(sock, deadline)) as answer:
            return read_response(answer)


SEND_CHUNK = 256 * 1024


def _send(sock: socket.socket, data: bytes, deadline: float) -> None:
    """Send `data`, stopping early once the service answers (e.g. 413 before the body).

    A service that refuses a body by its declared size answers and closes without reading
    it; a client that keeps writing then meets a reset and, reporting only that, cannot tell
    "too big" from "down". So the socket is polled between chunks: an answer waiting ends
    the sending, and the answer is read.
    """
    import select

    view = memoryview(data)
    for start in range(0, len(view), SEND_CHUNK):
        if start and select.select([sock], [], [], 0)[0]:
            return
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request was not sent within the timeout")
        sock.settimeout(left)
        sock.sendall(view[start : start + SEND_CHUNK])


class _Until(io.RawIOBase):
    """A socket's bytes until a deadline: `timeout` bounds the whole answer, not each read.

    A socket's own timeout applies to each read, so a peer sending a byte at a time, each
    within it, would hold the caller (a hook, an agent step) for as long as it likes.
    """

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self.sock, self.deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no complete answer within the timeout")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


def read_response(stream: BinaryIO) -> tuple[int, dict[str, str], bytes]:
    """An HTTP/1.x response read from `stream` (interim 1xx answers skipped)."""
    while True:
        status, headers = _head(stream)
        if not 100 <= status < 200:
            break
    if status in (204, 304):  # no content, whatever the headers say (RFC 9112, 6.3)
        return status, headers, b""
    if headers.get("transfer-encoding", "").lower().endswith("chunked"):
        return status, headers, _chunks(stream)
    length = headers.get("content-length")
    if length is not None:
        size = body_length(length)
        body = stream.read(size)
        if len(body) != size:
            raise WireError("the connection closed inside the body")
        return status, headers, body
    body = stream.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise WireError(f"a body over {MAX_BODY_BYTES} bytes")
    return status, headers, body


def body_length(value: str) -> int:
    """A Content-Length this client reads: ASCII digits, at most :data:`MAX_BODY_BYTES`.

    Raises:
        WireError: anything else (``²``, ``+5``, ``5_0``, two values, too many digits).
    """
    digits = value.strip()
    if not _digits(digits, "0123456789") or len(digits) > 18 or int(digits) > MAX_BODY_BYTES:
        raise WireError(f"a Content-Length this client does not read: {value[:40]!r}")
    return int(digits)


def _digits(text: str, alphabet: str) -> bool:
    """Whether `text` is one or more of `alphabet`'s characters and nothing else.

    HTTP numbers are ASCII digits (RFC 9110 8.6, RFC 9112 7.1); `int()` also reads ``²``,
    ``+5``, ``5_0`` and ``0x5``, where another reader would fail or frame the body otherwise.
    """
    return bool(text) and all(ch in alphabet for ch in text)


def _line(stream: BinaryIO, budget: list[int]) -> bytes:
    line = stream.readline(budget[0] + 1)
    budget[0] -= len(line)
    if budget[0] < 0:
        raise WireError(f"an answer head over {MAX_HEADER_BYTES} bytes")
    if not line.endswith(b"\n"):
        raise WireError("the connection closed inside the answer's head")
    return line.rstrip(b"\r\n")


def _head(stream: BinaryIO) -> tuple[int, dict[str, str]]:
    budget = [MAX_HEADER_BYTES]
    version, _, rest = _line(stream, budget).partition(b" ")
    code = rest[:3]
    if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise WireError(f"not an HTTP/1.x status line: {version[:20]!r}")
    headers: dict[str, str] = {}
    while line := _line(stream, budget):
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon or not name.strip():
            raise WireError(f"not a header line: {line[:40]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(code), headers


def _chunks(stream: BinaryIO) -> bytes:
    body = bytearray()
    budget = [MAX_HEADER_BYTES]
    while True:
        size_text = _line(stream, budget).split(b";", 1)[0].strip()
        hex_digits = size_text.decode("latin-1")
        if not _digits(hex_digits, "0123456789abcdefABCDEF") or len(hex_digits) > 16:
            raise WireError(f"not a chunk size: {size_text[:20]!r}")
        size = int(size_text, 16)
        if size == 0:
            while _line(stream, budget):  # trailers, up to the blank line
                pass
            return bytes(body)
        if size < 0 or len(body) + size > MAX_BODY_BYTES:
            raise WireError(f"a body over {MAX_BODY_BYTES} bytes")
        chunk = stream.read(size)
        if len(chunk) != size or stream.read(2) != b"\r\n":
            raise WireError("the connection closed inside a chunk")
        body += chunk
        budget = [MAX_HEADER_BYTES]


def _https(
    host: str,
    port: int | None,
    method: str,
    target: str,
    body: bytes | None,
    headers: Mapping[str, str],
    timeout: float,
) -> tuple[int, dict[str, str], bytes]:
    import http.client
    import threading

    conn = http.client.HTTPSConnection(host, port, timeout=timeout)
    cut = threading.Event()

    def cut_off() -> None:  # the deadline: end the connection under whatever read waits
        cut.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout, cut_off)
    timer.daemon = True
    timer.start()
    try:
        try:
            conn.request(method, target or "/", body=body, headers=dict(headers))
        except ConnectionError:  # refused mid-body (a 413): the answer may be there to read
            if cut.is_set():
                raise
        response = conn.getresponse()
        length = response.getheader("content-length")
        if length is not None:
            body_length(length)  # http.client would read a length it cannot parse to the end
        raw = _bounded(response)
    except http.client.HTTPException as exc:
        if cut.is_set():
            raise TimeoutError("no complete answer within the timeout") from None
        raise WireError(f"{type(exc).__name__}: {exc}") from None
    except OSError:
        if cut.is_set():
            raise TimeoutError("no complete answer within the timeout") from None
        raise
    finally:
        timer.cancel()
        conn.close()
    if cut.is_set():
        raise TimeoutError("no complete answer within the timeout")
    return response.status, {k.lower(): v for k, v in response.getheaders()}, raw


def _bounded(response: Any) -> bytes:
    """An `http.client` response's body, refused past :data:`MAX_BODY_BYTES` (as over http).

    `read()` would take any size; `read(n)` may return less than `n` before the end, so
    the body is read piece by piece up to one byte over the bound.
    """
    body = bytearray()
    while piece := response.read(min(SEND_CHUNK, MAX_BODY_BYTES + 1 - len(body))):
        body += piece
        if len(body) > MAX_BODY_BYTES:
            raise WireError(f"a body over {MAX_BODY_BYTES} bytes")
    return bytes(body)
