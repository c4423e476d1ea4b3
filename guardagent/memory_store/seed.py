"""Open a profile's memory, seeded with its verified demonstrations.

Seeding runs once per process and store location; it is idempotent across restarts because
demonstration ids are content hashes.
"""

from __future__ import annotations

import logging
import threading
from functools import lru_cache

from guardagent.memory_store.store import MemoryStore
from guardagent.profiles.loader import Profile, load_profile
from guardagent.verification import program_problems

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
        if problems[demo["id"]]:
            log.warning("profile %s: demonstration program not verified: %s",
                        profile.name, problems[demo["id"]])
    store.add(demos)
    return problems


@lru_cache(maxsize=32)
def _open(profile_ref: str, path: str | None, url: str | None) -> MemoryStore:
    profile = load_profile(profile_ref)
    store = MemoryStore(profile.name, path=path, url=url)
    seed_memory(store, profile)
    return store


def open_memory(profile_ref: str, path: str | None = None, url: str | None = None) -> MemoryStore:
    """The seeded memory store of a profile (cached per process)."""
    with _LOCK:
        return _open(profile_ref, path, url)
