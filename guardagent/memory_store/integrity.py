"""Who wrote a memory record: HMAC tags from the deployment's memory key.

Whoever can write to the Chroma collection (another process on the machine, any client of a
shared Chroma server) could otherwise plant a program for the guard to run, or text for the
model to read as a demonstration. Every record this package writes carries two HMAC-SHA256
tags made with the deployment's key: one over the whole record (input, output, plan, code,
label, details, request fingerprint), one over the program alone (request fingerprint and
code, so the program list can be checked from metadata without fetching documents). A record
whose tag does not check is never returned, run, nor shown to a model. Nothing else in a
record is believed either: whether its program is verified is decided again in this process.

The key, in order: the `key` argument of :class:`~guardagent.memory_store.MemoryStore` /
`open_memory`, else `$GUARDAGENT_MEMORY_KEY`, else, for a local memory directory, a key file
`memory.key` made beside the database on first use (random, mode 0600; refused when others
can read it). A shared memory (a Chroma server URL) has no key file: without a configured key
its records are written untagged and none is trusted.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import stat
from hashlib import sha256
from pathlib import Path
from typing import Any

from guardagent.environment import MEMORY_KEY, value

KEY_FILE = "memory.key"
MIN_KEY_BYTES = 16
RECORD_TAG = "hmac"
PROGRAM_TAG = "program_hmac"


class MemoryKeyError(ValueError):
    """A memory key that is too short, or a key file others could read or replace."""


def memory_key(key: str | bytes | None, path: str | Path | None, url: str | None) -> bytes | None:
    """The key that signs and checks a memory's records, or None (trust nothing).

    Args:
        key: A key from the deployment's configuration (at least 16 bytes).
        path: The local memory directory (its key file is used when no key is configured).
        url: A Chroma server URL; with no configured key a shared memory has none.

    Raises:
        MemoryKeyError: A configured key shorter than 16 bytes, or an unsafe key file.
    """
    configured = key if key else value(MEMORY_KEY)
    if configured:
        raw = configured.encode("utf-8") if isinstance(configured, str) else bytes(configured)
        if len(raw) < MIN_KEY_BYTES:
            raise MemoryKeyError(f"a memory key needs at least {MIN_KEY_BYTES} bytes")
        return raw
    if url:
        return None
    if path is None:
        raise MemoryKeyError("a local memory needs its directory to keep its key file")
    return key_file(Path(path))


def key_file(directory: Path) -> bytes:
    """The key in `directory/memory.key`, made (random, 0600) when there is none yet."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / KEY_FILE
    if not path.exists():
        _create(path)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077 or info.st_uid != os.getuid():
            raise MemoryKeyError(
                f"{path} must be a regular file owned by this user and readable by it only "
                "(chmod 600)"
            )
        text = os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    if len(text) < 2 * MIN_KEY_BYTES:
        raise MemoryKeyError(f"{path} holds no usable key")
    return text.encode("ascii")


def _create(path: Path) -> None:
    """Write a fresh key under a temporary name, then link it in.

    Concurrent first uses agree on one key, and no reader ever sees a half-written file.
    """
    tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, (secrets.token_hex(32) + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another process made it first: use theirs
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _tag(key: bytes, parts: list[Any]) -> str:
    message = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hmac.new(key, message.encode("utf-8"), sha256).hexdigest()


def record_tag(
    key: bytes,
    *,
    agent_input: str,
    agent_output: str,
    plan: str,
    code: str,
    label: int,
    details: Any,
    request: str,
) -> str:
    """The tag over a whole record."""
    fields = [agent_input, agent_output, plan, code, label, details, request]
    return _tag(key, ["guardagent-memory-record-v1", *fields])


def program_tag(key: bytes, *, code: str, request: str) -> str:
    """The tag over a record's program and the request it is for."""
    return _tag(key, ["guardagent-memory-program-v1", request, code])


def checks(expected: str, given: Any) -> bool:
    """Whether a stored tag equals the expected one (constant time)."""
    return isinstance(given, str) and hmac.compare_digest(expected, given)
