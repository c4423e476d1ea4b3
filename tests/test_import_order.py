"""Every module of the package imports as the first import of a fresh interpreter.

An import circle stays hidden while some other module happens to be imported first (the test
suite imports `guardagent.agent` almost everywhere), and shows as an `ImportError` in a
process, a notebook or a sandbox worker that starts from a different module. So each module is
imported first in its own process.

One interpreter per module costs ~0.6 s (LangGraph, LangChain, pydantic...), minutes for the
whole package, so one interpreter loads the *third-party* modules the package uses, and then
forks once per module: each child starts with no `guardagent` module loaded, which is what an
import circle of this package depends on (third-party import order cannot close one of ours). The children run a few at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "guardagent"

# Loads every module once to learn the third-party modules they use (printed as JSON).
_THIRD_PARTY = """
import importlib, json, sys
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
print(json.dumps(sorted(n for n in sys.modules if n.split(".")[0] != "guardagent")))
"""

# Loads those modules, then imports each package module first in a forked child.
_FORKED = """
import importlib, json, os, sys, traceback
names, preload = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in preload:
    try:
        importlib.import_module(name)
    except BaseException:
        pass  # a module that imports only as part of its package: the child imports it then
assert not [n for n in sys.modules if n.split(".")[0] == "guardagent"]
failures, running = {}, {}
def reap():
    pid, status = os.wait()
    name, read = running.pop(pid)
    with os.fdopen(read, "rb") as pipe:
        error = pipe.read().decode()
    if status != 0:
        failures[name] = error or f"exit status {status}"
for name in names:
    if len(running) >= max(2, os.cpu_count() or 2):
        reap()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            code = 0
        except BaseException:
            os.write(write, traceback.format_exc()[-2000:].encode())
            code = 1
        os._exit(code)
    os.close(write)
    running[pid] = (name, read)
while running:
    reap()
print(json.dumps(failures))
"""


def package_modules() -> list[str]:
    """Every module of the package, from its files (listing them must import none of them).

    A `.py` file in a folder without `__init__.py` (a profile's or a policy example's program,
    `guardagent/profiles/eicu-ac/access_control.py`) is data the guard reads, not a module.
    """
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(
            not (folder / "__init__.py").is_file()
            for folder in path.parents
            if folder.is_relative_to(PACKAGE)
        ):
            continue
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def _run(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout.strip().splitlines()[-1]


def test_the_listing_finds_the_package_modules() -> None:
    names = package_modules()
    assert len(names) > 150
    assert {"guardagent", "guardagent.nodes.decide", "guardagent.graph"} <= set(names)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    names = package_modules()
    preload = _run(_THIRD_PARTY, json.dumps(names))
    failures = json.loads(_run(_FORKED, json.dumps(names), preload))
    assert failures == {}, "\n\n".join(f"{name}:\n{error}" for name, error in failures.items())


# Whichever module a process imports first, the built-in toolbox is the same, in the same order:
# the coder's prompt lists it (grouped, in registration order within a group).
_TOOLBOX = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
from guardagent.tools.registry import DEFAULT_TOOLBOX
print(json.dumps([[spec.name, spec.group] for spec in DEFAULT_TOOLBOX]))
"""

_FIRST_IMPORTS = (
    "guardagent.tools",
    "guardagent.readers.toolcall",
    "guardagent.readers",
    "guardagent.policy.shipped",
    "guardagent.tools.text",
    "guardagent.agent",
    "guardagent.tools.registry",
)


def test_the_builtin_toolbox_does_not_depend_on_the_first_import() -> None:
    listings = {first: json.loads(_run(_TOOLBOX, first)) for first in _FIRST_IMPORTS}
    expected = listings["guardagent.tools"]
    assert len(expected) >= 20
    assert {first: listing for first, listing in listings.items() if listing != expected} == {}
