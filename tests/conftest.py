"""Test-wide setup: the tests' own memory folder and no deployment settings from the shell.

The memory folder is always a fresh private one, even when the shell running the tests sets
`$GUARDAGENT_MEMORY_DIR` (the user's real memory: tests must not write test profiles into
it), and every other deployment setting that would point the tests at the user's state or
change the guard's behaviour (a memory server, a key, a model, extra profiles...) is
dropped. Kept: `GUARDAGENT_DATA`, where the benchmark data lives, and the settings of the tests
themselves, which change no guard (`GUARDAGENT_LANGGRAPH_API_PYTHON`, the opt-in LangGraph
server test's environment; `GUARDAGENT_PG_BIN`, Postgres's binaries; `GUARDAGENT_PARITY_STEP`).
No rules derived from a guard request carry from one test to the next.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest

_KEPT = {"GUARDAGENT_DATA", "GUARDAGENT_LANGGRAPH_API_PYTHON", "GUARDAGENT_PG_BIN",
         "GUARDAGENT_PARITY_STEP"}  # fmt: skip
for _name in [n for n in os.environ if n.startswith("GUARDAGENT_") and n not in _KEPT]:
    del os.environ[_name]
_MEMORY = tempfile.mkdtemp(prefix="guardagent-test-memory-")
os.environ["GUARDAGENT_MEMORY_DIR"] = _MEMORY
os.environ["GUARDAGENT_CACHE_DIR"] = os.path.join(_MEMORY, "cache")  # verification results
atexit.register(shutil.rmtree, _MEMORY, ignore_errors=True)  # leave no folder behind
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture(autouse=True)
def _no_derived_rules_across_tests() -> Iterator[None]:
    """Rules a model derived in one test never judge another test's programs.

    The registry is per process and per request fingerprint, which copies of the same
    built-in profile in different tests share (as a new process would start empty).
    """
    _clear_derived()
    yield
    _clear_derived()


def _clear_derived() -> None:
    derived = sys.modules.get("guardagent.counterfactuals.derived")  # not imported: holds none
    if derived is not None:
        derived.clear_derived()
