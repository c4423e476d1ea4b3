"""Whether a local Chroma memory changed since a point, for a few microseconds.

A search must see what every process sharing the memory directory wrote (another guard's
verified program, a record rewritten or deleted in place). Asking Chroma for its count and
the chosen records costs ~0.6 ms per event, most of an event's memory work. An embedded
Chroma keeps every record in one SQLite file, `chroma.sqlite3`, and SQLite answers
`PRAGMA data_version` with a number that changes whenever any other connection, in this
process or another, commits to the file. So a read-only connection of our own, which never
writes, sees a new number after every write by anyone: the store keeps what it read from
Chroma under the token it read first, and asks Chroma again only when the token moved.

The token is the file's identity (device, inode: a directory replaced under us starts
afresh), the generation of our connection (a reopened connection counts from scratch, so its
numbers never match an earlier one's) and that number. Anything unusual (no such file, a
Chroma that stores elsewhere, a locked or unreadable database, a server URL) gives no token,
and the store then asks Chroma every time, as it always did.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from pathlib import Path

DATABASE = "chroma.sqlite3"

Token = tuple[int, int, int, int]


class ChangeToken:
    """The change token of one local Chroma directory.

    Args:
        directory: The embedded Chroma client's directory (its `chroma.sqlite3`).
    """

    def __init__(self, directory: str | Path) -> None:
        self._path = Path(directory).absolute() / DATABASE
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._pid = os.getpid()
        self._generation = 0

    def __call__(self) -> Token | None:
        """(device, inode, generation, data_version) now, or None when it cannot be read."""
        try:
            stat = os.stat(self._path)
        except OSError:
            return None
        identity = (stat.st_dev, stat.st_ino)
        with self._lock:
            try:
                if os.getpid() != self._pid:  # a fork: the parent's connection is not ours
                    self._conn, self._pid = None, os.getpid()
                if self._conn is None or identity != self._identity:
                    self._close()
                    self._generation += 1
                    # Read-only, no shared cache: a connection of its own that never writes.
                    self._conn = sqlite3.connect(
                        f"{self._path.as_uri()}?mode=ro",
                        uri=True,
                        timeout=1.0,
                        check_same_thread=False,
                        isolation_level=None,
                    )
                    self._identity = identity
                row = self._conn.execute("PRAGMA data_version").fetchone()
            except (sqlite3.Error, ValueError):
                self._close()
                return None
            generation = self._generation
        return (*identity, generation, int(row[0])) if row else None

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
        self._conn = None
