"""Test-wide setup: a private memory directory (tests never touch the user's data dir), and
no rules derived from a guard request carried from one test to the next."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

import pytest

if "GUARDAGENT_MEMORY_DIR" not in os.environ:
    _MEMORY = tempfile.mkdtemp(prefix="guardagent-test-memory-")
    os.environ["GUARDAGENT_MEMORY_DIR"] = _MEMORY
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
