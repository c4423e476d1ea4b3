"""What nodes need from the run's context: the profile, its memory and the model."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.llm import resolve_model
from guardagent.memory_store.seed import open_memory
from guardagent.memory_store.store import MemoryStore
from guardagent.profiles.loader import Profile, load_profile
from guardagent.sandbox.process import SandboxLimits


def context_of(runtime: Runtime[GuardContext]) -> GuardContext:
    """The run's context; defaults when none was given.

    As a subgraph of a host graph we receive the host's context as it is, often a plain dict
    with the host's own keys: our fields are taken from it and the rest is left to the host.
    """
    ctx: Any = runtime.context
    if ctx is None:
        return GuardContext()
    if isinstance(ctx, GuardContext):
        return ctx
    if isinstance(ctx, dict):
        known = {f.name for f in fields(GuardContext)}
        return GuardContext(**{k: v for k, v in ctx.items() if k in known})
    raise TypeError(f"context must be a GuardContext or a dict, not {type(ctx).__name__}")


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
