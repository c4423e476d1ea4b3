"""The project's types, registered with LangGraph's checkpoint serializer.

A checkpoint of the guard graph holds a :class:`~guardagent.decision.GuardDecision` and the
policy's result models. LangGraph's `JsonPlusSerializer` rebuilds such objects only when their
type is on its msgpack allowlist: unlisted ones are rebuilt with a warning by default
("Deserializing unregistered type ...") and come back as plain dicts under
``LANGGRAPH_STRICT_MSGPACK=true``, so a thread's state would stop restoring. The list is
derived from the state schema (every pydantic model, dataclass and enum it reaches), so a
type added to the state is registered too; `langgraph.json` carries the same list for
LangGraph's server (``checkpointer.serde.allowed_msgpack_modules``, checked by a test).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from typing import Any, get_args, get_type_hints

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel
from typing_extensions import is_typeddict

from guardagent.nodes.state import GuardState


def _walk(hint: Any, found: set[tuple[str, str]], seen: set[Any]) -> None:
    """Add every class of `hint` the serializer would tag with its module and name."""
    if hint in seen:  # types and typing forms hash; a recursive model ends here
        return
    seen.add(hint)
    for arg in get_args(hint):  # unions, containers, Annotated, Literal (values: skipped)
        _walk(arg, found, seen)
    if not isinstance(hint, type):
        return
    if issubclass(hint, BaseModel) or dataclasses.is_dataclass(hint) or issubclass(hint, enum.Enum):
        found.add((hint.__module__, hint.__qualname__))
    if is_typeddict(hint) or issubclass(hint, BaseModel) or dataclasses.is_dataclass(hint):
        for field in get_type_hints(hint).values():
            _walk(field, found, seen)


def guard_types() -> tuple[tuple[str, str], ...]:
    """(module, class) of every project type a guard checkpoint can hold, sorted."""
    found: set[tuple[str, str]] = set()
    _walk(GuardState, found, set())
    return tuple(sorted(found))


GUARD_TYPES = guard_types()
"""The allowlist entries for the guard graph's state (and what it nests)."""


def guard_serializer(extra: Iterable[tuple[str, str]] = ()) -> JsonPlusSerializer:
    """A checkpoint serializer that restores the guard's types, and only listed types.

    Pass it to the saver of a graph that checkpoints guard state, e.g.
    ``AsyncPostgresSaver(conn, serde=guard_serializer())``.

    Args:
        extra: More (module, class) pairs of a host graph's own state.
    """
    return JsonPlusSerializer(allowed_msgpack_modules=[*GUARD_TYPES, *extra])
