"""Open a profile's memory, seeded with its demonstrations.

Seeding runs once per process and store location; it is idempotent across restarts because
demonstration ids are content hashes. The memory checks every record's integrity tag with
the deployment's key and counts a program as verified only once it verifies here.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache

from guardagent.memory_store.store import MemoryStore
from guardagent.profiles.check import unverified_note
from guardagent.profiles.loader import Profile, load_profile
from guardagent.profiles.verification import program_problems

log = logging.getLogger(__name__)
_LOCK = threading.Lock()


def seed_memory(store: MemoryStore, profile: Profile) -> dict[str, list[str]]:
    """Verify each distinct demonstration program on all demonstrations, then store them.

    Returns:
        Program problems by demonstration id (empty lists for verified programs).
    """
    demos = profile.demos(verified=False)
    problems: dict[str, list[str]] = {}
    for demo in demos:
        problems[demo["id"]] = program_problems(demo["code"], profile)
        demo["verified"] = not problems[demo["id"]]
    note = unverified_note(profile) if any(problems.values()) else None
    if note:  # once per profile, naming the user's demonstration ids
        log.warning("%s", note)
    store.add(demos)
    return problems


@lru_cache(maxsize=32)
def _open(
    profile_ref: str, path: str | None, url: str | None, key: str | bytes | None
) -> MemoryStore:
    profile = load_profile(profile_ref)

    def verifies(code: str) -> bool:
        return not program_problems(code, profile)

    store = MemoryStore(profile.name, path=path, url=url, key=key, verifier=verifies)
    if not store.signed:
        log.warning(
            "memory %s has no key: its records are written untagged and none is trusted; "
            "set GUARDAGENT_MEMORY_KEY (the same on every guard sharing it)",
            url or path,
        )
    seed_memory(store, profile)
    if len(_OPENED) >= 32:  # as many as `_open` keeps
        _OPENED.clear()
    _OPENED[(profile_ref, path, url, key)] = store
    return store


_OPENED: dict[tuple[str, str | None, str | None, str | bytes | None], MemoryStore] = {}


def opened_memory(
    profile_ref: str,
    path: str | None = None,
    url: str | None = None,
    key: str | bytes | None = None,
) -> MemoryStore | None:
    """The store :func:`open_memory` returned for these arguments, if any: never opens one.

    For a caller that must not block (an event loop) to ask whether a store is ready.
    """
    return _OPENED.get((profile_ref, path, url, key))


def open_memory(
    profile_ref: str,
    path: str | None = None,
    url: str | None = None,
    key: str | bytes | None = None,
) -> MemoryStore:
    """The seeded memory store of a profile (cached per process).

    Args:
        profile_ref: Profile name or path.
        path: Local memory directory (default: the user data dir).
        url: Chroma server URL of a shared memory.
        key: The deployment's memory key; else `$GUARDAGENT_MEMORY_KEY`, else (local only)
            the directory's key file. A shared memory with no key trusts no record.
    """
    with _LOCK:
        return _open(profile_ref, path, url, key)
