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
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.guards import MakeGuard

_KEPT = {
    "GUARDAGENT_DATA",
    "GUARDAGENT_LANGGRAPH_API_PYTHON",
    "GUARDAGENT_PG_BIN",
    "GUARDAGENT_PARITY_STEP",
}
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


@pytest.fixture(scope="module")
def make_guard(tmp_path_factory: pytest.TempPathFactory) -> MakeGuard:
    """The one way a test module builds its `guard` fixture.

    Args of the returned function:
        profile: A profile name or path; `None` with `files`, the folder they are written to;
            `None` without, the trace tests' profile (:func:`tests.test_trace_wiring.trace_profile`,
            every predicate a trace predicate) in a fresh folder.
        trace_key: The deployment's key for signed thread state.
        files: Profile files (`policy.yaml`, `profile.yaml`, ...) to write to a fresh folder.
        own_memory: A fresh memory folder for this guard, not the tests' shared one.
    """
    from guardagent.agent import GuardAgent

    def make(
        profile: str | Path | None = None,
        *,
        trace_key: str | None = None,
        files: Mapping[str, str] | None = None,
        own_memory: bool = False,
    ) -> GuardAgent:
        if files is not None:
            root = tmp_path_factory.mktemp("profile")
            for name, text in files.items():
                (root / name).write_text(text, encoding="utf-8")
            profile = root if profile is None else profile
        if profile is None:
            from tests.test_trace_wiring import trace_profile

            profile = trace_profile(tmp_path_factory.mktemp("p"))
        memory = str(tmp_path_factory.mktemp("memory")) if own_memory else None
        return GuardAgent(profile=str(profile), trace_key=trace_key, memory_dir=memory)

    return make
