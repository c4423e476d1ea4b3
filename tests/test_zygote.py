"""The pre-warmed zygote: which toolboxes it serves, and that it trusts nothing around it."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import pytest

from guardagent.profiles import load_profile
from guardagent.readers import user_facts
from guardagent.sandbox.process import run_program
from guardagent.sandbox.zygote import _zygote, toolbox_refs
from guardagent.tools.registry import Toolbox, ToolSpec

PROGRAM = "deny([str(parse_user_info(agent_input).get('age'))], 'age')"
EVENT = "Task: x\nUser information:\n   age: 30"


def test_wrapped_builtin_is_not_replaced_by_the_original() -> None:
    """A user's wrapper that reports a built-in's name must run as written (fork path)."""

    @functools.wraps(user_facts.parse_user_info)
    def stricter(agent_input: str) -> dict[str, Any]:
        return {"age": -1}

    tools = Toolbox([ToolSpec("parse_user_info", stricter, "web")])
    assert toolbox_refs(tools) is None
    result = run_program(PROGRAM, tools, EVENT, "")
    assert result["ok"] and result["verdict"]["violations"] == ["-1"]  # type: ignore[index]


def test_builtins_are_served_and_decide_like_the_caller() -> None:
    tools = load_profile("mind2web-sc").tools()
    assert toolbox_refs(tools) is not None
    result = run_program(PROGRAM, tools, EVENT, "")
    assert result["ok"] and result["verdict"]["violations"] == ["30"]  # type: ignore[index]


def test_modules_in_the_working_directory_are_not_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `select.py` (or `json.py`) where the guard runs must not execute in the zygote."""
    marker = tmp_path / "imported"
    (tmp_path / "select.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (tmp_path / "json.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.chdir(tmp_path)
    zygote = _zygote()
    zygote.stop()  # force a fresh zygote started from this directory
    tools = load_profile("mind2web-sc").tools()
    result = run_program(PROGRAM, tools, EVENT, "")
    assert result["ok"], result
    assert not marker.exists()


def test_zygote_socket_is_private() -> None:
    zygote = _zygote()
    assert os.stat(zygote.path).st_mode & 0o077 == 0
    assert os.stat(zygote.dir).st_mode & 0o077 == 0
