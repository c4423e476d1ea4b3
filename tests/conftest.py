"""Test-wide setup: a private memory directory, so tests never touch the user's data dir."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

if "GUARDAGENT_MEMORY_DIR" not in os.environ:
    _MEMORY = tempfile.mkdtemp(prefix="guardagent-test-memory-")
    os.environ["GUARDAGENT_MEMORY_DIR"] = _MEMORY
    atexit.register(shutil.rmtree, _MEMORY, ignore_errors=True)  # leave no folder behind
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
