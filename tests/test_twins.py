"""Sync/async twins written once (issue 36 item 5): `guardagent.twins` and its users.

A sync function and its async twin written side by side drift apart; the bodies are now
generators of waits driven two ways. These tests hold that the two drivers agree on every
body (results, exceptions thrown back in, exceptions escaping), and that the sync/async
pairs of the agent, the guard's runs and the middleware stay thin drivers of one body.
"""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.twins import Twin, Wait, arun, async_only, run, sync_only

PACKAGE = Path(__file__).resolve().parents[1] / "guardagent"
TWIN_MODULES = [
    "agent.py",
    "guard/runs.py",
    "integrations/middleware.py",
    "integrations/held_answers.py",
    "integrations/subgraph.py",
]
MAX_TWIN_STATEMENTS = 2  # a docstring and `return [await] driver(body(...))`


class Boom(Exception):
    """A wait that failed."""


def _body(steps: list[tuple[str, int]], catch: bool) -> Twin[list[Any]]:
    seen: list[Any] = []
    for kind, number in steps:
        if kind == "value":
            wait = Wait(lambda n=number: n, lambda n=number: _async_value(n))
        else:
            wait = Wait(lambda n=number: _raise(n), lambda n=number: _async_raise(n))
        try:
            seen.append((yield wait))
        except Boom as exc:
            if not catch:
                raise
            seen.append(f"caught {exc}")
    return seen


def _raise(number: int) -> Any:
    raise Boom(str(number))


async def _async_value(number: int) -> int:
    await asyncio.sleep(0)
    return number


async def _async_raise(number: int) -> Any:
    await asyncio.sleep(0)
    raise Boom(str(number))


def _outcome(drive: Any) -> tuple[str, Any]:
    try:
        return "ok", drive()
    except Boom as exc:
        return "raised", str(exc)


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(st.tuples(st.sampled_from(["value", "raise"]), st.integers(0, 99)), max_size=8),
    catch=st.booleans(),
)
def test_both_drivers_give_the_same_outcome(steps: list[tuple[str, int]], catch: bool) -> None:
    sync = _outcome(lambda: run(_body(steps, catch)))
    both = _outcome(lambda: asyncio.run(arun(_body(steps, catch))))
    assert sync == both


def test_a_wait_of_the_other_path_is_refused() -> None:
    def body(wait: Wait) -> Twin[Any]:
        return (yield wait)

    with pytest.raises(RuntimeError, match="other path"):
        run(body(async_only(lambda: _async_value(1))))
    with pytest.raises(RuntimeError, match="other path"):
        asyncio.run(arun(body(sync_only(lambda: 1))))
    assert run(body(sync_only(lambda: 1))) == 1
    assert asyncio.run(arun(body(async_only(lambda: _async_value(2))))) == 2


def _thick_twins(source: str) -> list[str]:
    """Async functions whose sync twin exists and whose body is more than a driver call."""
    tree = ast.parse(source)
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef | ast.FunctionDef))]
    thick = []
    for scope in scopes:
        body = scope.body
        sync = {n.name for n in body if isinstance(n, ast.FunctionDef)}
        for node in body:
            if not isinstance(node, ast.AsyncFunctionDef):
                continue
            twin = node.name.removeprefix("a").removeprefix("_a")
            twin = "_" + twin if node.name.startswith("_a") else twin
            if twin in sync and len(node.body) > MAX_TWIN_STATEMENTS:
                thick.append(node.name)
    return thick


@pytest.mark.parametrize("module", TWIN_MODULES)
def test_sync_async_pairs_are_one_body_driven_twice(module: str) -> None:
    source = (PACKAGE / module).read_text(encoding="utf-8")
    assert _thick_twins(source) == []


def test_the_sandbox_client_drives_one_exchange_both_ways() -> None:
    """The zygote's blocking client and its event-loop client run one protocol body."""
    tree = ast.parse((PACKAGE / "sandbox" / "azygote.py").read_text(encoding="utf-8"))
    bodies = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    for name, driver in (("run_in_zygote", "run"), ("arun_in_zygote", "arun")):
        assert name in bodies, f"{name} is not beside the exchange it drives"
        calls = {
            c.func.id
            for c in ast.walk(bodies[name])
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
        }
        assert {driver, "exchange"} <= calls, name
