"""What nodes need from the run's context: the profile, its memory and the model."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel

from guardagent.context import GuardContext
from guardagent.llm import resolve_model
from guardagent.memory_store.seed import open_memory
from guardagent.memory_store.store import MemoryStore
from guardagent.profiles.loader import Profile, load_profile
from guardagent.tools.sandbox import SandboxLimits


def context_of(runtime: Any) -> GuardContext:
    """The run's context; a plain dict (as Studio sends it) is accepted too."""
    ctx = getattr(runtime, "context", None)
    if ctx is None:
        return GuardContext()
    if isinstance(ctx, dict):
        return GuardContext(**ctx)
    return ctx  # type: ignore[no-any-return]


def profile_of(ctx: GuardContext) -> Profile:
    """The run's guard profile."""
    return load_profile(ctx.profile)


def memory_of(ctx: GuardContext) -> MemoryStore:
    """The run's seeded memory store."""
    return open_memory(ctx.profile, ctx.memory_dir, ctx.memory_url)


def model_of(ctx: GuardContext) -> BaseChatModel | None:
    """The run's chat model, or None when offline."""
    return resolve_model(ctx.model, ctx.base_url)


def limits_of(ctx: GuardContext) -> SandboxLimits:
    """Sandbox limits for the run."""
    return SandboxLimits(wall_seconds=ctx.timeout_seconds)
