"""Chroma memory of demonstrations, re-ranked by Levenshtein distance.

Names load on first use: the `guardagent memory` commands live in this package
(:mod:`.cli`), and the CLI imports them at start, so importing the package must not load the
store (SQLite, Levenshtein, Chroma's client) before a command needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guardagent.memory_store.embeddings import HashingEmbeddings
    from guardagent.memory_store.store import (
        Demonstration,
        MemoryStore,
        default_memory_dir,
        demonstration_id,
        request_fingerprint,
    )

_HOMES = {
    "Demonstration": "store",
    "MemoryStore": "store",
    "default_memory_dir": "store",
    "demonstration_id": "store",
    "request_fingerprint": "store",
    "HashingEmbeddings": "embeddings",
}

__all__ = [
    "Demonstration",
    "HashingEmbeddings",
    "MemoryStore",
    "default_memory_dir",
    "demonstration_id",
    "request_fingerprint",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
