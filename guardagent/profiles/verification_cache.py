"""Verification results of built-in profiles' own programs, kept across processes.

Verifying a program runs it on every labelled demonstration and on the request's whole
counterfactual suite: 0.1-0.4 s, which every new process paid on the first decision of each
built-in profile. For a built-in profile's own program (package code, verified in-process
like the readers it calls) the result depends only on the installed package, so it is kept
on disk under a key that covers every source and data file of the package, the profile's
verification key and the program: any change to any of them is a new key, verified afresh.

Only those programs are cached: a program from memory or a model is always verified in the
process that runs it. A cache entry could at most change how a built-in program that ships
with the package is judged, and a missing, unreadable or malformed entry is a cache miss.
The folder is `$GUARDAGENT_CACHE_DIR`, else the user's cache directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from guardagent.environment import CACHE_DIR, value

_PACKAGE = Path(__file__).resolve().parent
_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".jsonl", ".md", ".txt")


@lru_cache(maxsize=1)
def package_digest() -> str:
    """SHA-256 over the package's source and data files (paths and bytes), once per process."""
    digest = hashlib.sha256()
    files = sorted(
        p for p in _PACKAGE.rglob("*") if p.suffix in _SUFFIXES and "__pycache__" not in p.parts
    )
    for path in files:
        digest.update(str(path.relative_to(_PACKAGE)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def cache_dir() -> Path:
    """Where verification results are kept."""
    configured = value(CACHE_DIR)
    if configured:
        return Path(configured) / "verified"
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("guardagent")) / "verified"


def cached_problems(key: str, compute: Callable[[], list[str]]) -> list[str]:
    """The problems stored under `key` (with the package digest), else computed and stored."""
    name = hashlib.sha256(f"{package_digest()}\0{key}".encode()).hexdigest()
    path = cache_dir() / f"{name}.json"
    with contextlib.suppress(OSError, ValueError):
        stored = json.loads(path.read_text(encoding="utf-8"))
        if type(stored) is list and all(type(p) is str for p in stored):
            return list(stored)
    problems = compute()
    with contextlib.suppress(OSError):  # a read-only home only costs the next process time
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, delete=False, encoding="utf-8"
        ) as tmp:
            json.dump(problems, tmp)
        os.replace(tmp.name, path)  # whole or not at all, even with processes racing
    return problems
