"""Chroma memory of demonstrations, re-ranked by Levenshtein distance."""

from guardagent.memory_store.embeddings import HashingEmbeddings
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
