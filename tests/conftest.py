"""Test-wide setup: the tests' own memory folder and no deployment settings from the shell.

The memory folder is always a fresh private one, even when the shell running the tests sets
`$GUARDAGENT_MEMORY_DIR` (the user's real memory: tests must not write test profiles into
it), and every other deployment setting that would point the tests at the user's state or
change the guard's behaviour (a memory server, a key, a model, extra profiles...) is
dropped. `GUARDAGENT_DATA`, where the benchmark data lives, is kept.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

_KEPT = {"GUARDAGENT_DATA"}
for _name in [n for n in os.environ if n.startswith("GUARDAGENT_") and n not in _KEPT]:
    del os.environ[_name]
_MEMORY = tempfile.mkdtemp(prefix="guardagent-test-memory-")
os.environ["GUARDAGENT_MEMORY_DIR"] = _MEMORY
os.environ["GUARDAGENT_CACHE_DIR"] = os.path.join(_MEMORY, "cache")  # verification results
atexit.register(shutil.rmtree, _MEMORY, ignore_errors=True)  # leave no folder behind
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
