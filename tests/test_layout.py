"""Package layout rules (issue 21 item 5): no import circle, old import paths still work."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import guardagent

PACKAGE = Path(guardagent.__file__).parent


def _imported_after(module: str) -> set[str]:
    code = f"import sys, {module}; print('\\n'.join(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def _imports(folder: Path) -> set[str]:
    """Every module named by an import statement anywhere in `folder`'s modules."""
    found: set[str] = set()
    for file in folder.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return found


def test_counterfactuals_do_not_import_the_verifier():
    """Regression (seen failing: suite.py imported same_details from verification inside a
    function, because verification imports the counterfactuals): no circle, even deferred."""
    assert "guardagent.profiles.verification" not in _imports(PACKAGE / "counterfactuals")
    assert "guardagent.profiles.verification" not in _imported_after("guardagent.counterfactuals")


def test_same_details_keeps_its_public_path():
    from guardagent.counterfactuals.details import same_details
    from guardagent.profiles.verification import same_details as public

    assert public is same_details
    assert same_details({"lab": ["a", "b"]}, {"lab": ["b", "a"], "cost": []})


AUTHORING = [
    "documents",
    "extract",
    "answers",
    "replay",
    "prompts",
    "optimize",
    "review",
    "cli",
    "derive",
]


@pytest.mark.parametrize("name", AUTHORING)
def test_the_authoring_modules_live_in_one_place(name: str):
    """No shim keeps an old path alive (issue 36, item 3): one module, one import path."""
    assert importlib.import_module(f"guardagent.authoring.{name}").__name__.startswith(
        "guardagent.authoring."
    )
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"guardagent.policy.{name}")


@pytest.mark.parametrize("name", ["ehr", "sandbox", "toolcalls", "web"])
def test_the_old_tool_module_paths_are_gone(name: str):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"guardagent.tools.{name}")


def test_the_policy_runtime_does_not_import_authoring():
    """The guard's policy runtime (model, grammar, z3, verification, ...) stands apart from the
    tools that write policies: no module of it imports authoring."""
    for file in (PACKAGE / "policy").glob("*.py"):
        found = {m for m in _imports_of(file) if m.startswith("guardagent.authoring")}
        assert not found, f"{file.name} imports {found}"


def _imports_of(file: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def _outline(file: Path) -> list[str]:
    """Top-level definitions and the methods of top-level classes (what an outline lists)."""
    entries: list[str] = []
    for node in ast.parse(file.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            entries.append(node.name)
        if isinstance(node, ast.ClassDef):
            entries += [
                f"{node.name}.{n.name}"
                for n in node.body
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            ]
    return entries


@pytest.mark.parametrize("name", ["model", "schema", "reading", "writing"])
def test_the_policy_model_modules_fit_one_screen_of_outline(name: str):
    assert len(_outline(PACKAGE / "policy" / f"{name}.py")) <= 50


def test_policy_model_keeps_its_public_names():
    from guardagent.policy import model, reading, schema, writing

    for name in ("PolicyModel", "Predicate", "Rule", "PolicyError", "guarding_model", "FORMAT"):
        assert getattr(model, name) is getattr(schema, name)
    for name in ("load_policy", "load_policy_text", "resolve_policy", "policy_digest"):
        assert getattr(model, name) is getattr(reading, name)
    assert model.dump_policy is writing.dump_policy
