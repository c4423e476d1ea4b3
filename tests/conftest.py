"""Test-wide setup: a private memory directory, so tests never touch the user's data dir."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("GUARDAGENT_MEMORY_DIR", tempfile.mkdtemp(prefix="guardagent-test-memory-"))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
