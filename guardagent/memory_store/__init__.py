"""Chroma memory of demonstrations, re-ranked by Levenshtein distance."""

from typing import Any

from guardagent.memory_store.store import (
    Demonstration,
    MemoryStore,
    default_memory_dir,
    demonstration_id,
    request_fingerprint,
)

__all__ = [
    "Demonstration",
    "HashingEmbeddings",
    "MemoryStore",
    "default_memory_dir",
    "demonstration_id",
    "request_fingerprint",
]


def __getattr__(name: str) -> Any:
    """`HashingEmbeddings` on first use: numpy is not needed to name a demonstration."""
    if name == "HashingEmbeddings":
        from guardagent.memory_store.embeddings import HashingEmbeddings

        return HashingEmbeddings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
