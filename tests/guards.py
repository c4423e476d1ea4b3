"""The type of the `make_guard` fixture (tests/conftest.py), for the modules that use it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from guardagent.agent import GuardAgent


class MakeGuard(Protocol):
    """How a test module builds its guard (the `make_guard` fixture)."""

    def __call__(
        self,
        profile: str | Path | None = None,
        *,
        trace_key: str | None = None,
        files: Mapping[str, str] | None = None,
        own_memory: bool = False,
    ) -> GuardAgent: ...
