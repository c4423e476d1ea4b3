"""What nodes need from the run's context: the settings, the profile, its memory and the model.

Where a run's settings come from decides who controls the guard, so there is one rule:

- a :class:`GuardContext` *instance* in the run's context was built by trusted Python code
  (`GuardAgent`, the integrations, a caller of the compiled graph) and is used as it is;
- anything else (a served graph's client, a host graph's own context dict, a
  :class:`RunContext`, nothing) contributes only the run-choosable keys (:data:`RUN_KEYS`),
  validated here, on top of the deployment's settings: those bound with
  :func:`bind_settings` (`build_graph(settings)`), else the server's environment
  (:meth:`GuardContext.from_env`).

A profile a run may not choose (a path, an unknown name) or facts that are not a JSON object
do not raise here: the run gets a :class:`RefusedContext`, whose profile and memory accessors
raise :class:`RunRefused`, so the graph denies the event with the reason (fail closed) without
reading any file the client named.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar, cast

from langgraph.runtime import Runtime

from guardagent.context import RUN_KEYS, GuardContext
from guardagent.environment import GUARD_SETTINGS, snapshot
from guardagent.llm import resolve_model
from guardagent.profiles.loader import Profile, builtin_profiles, fingerprints_per_run, load_profile
from guardagent.readers.user_facts import normalize_facts
from guardagent.sandbox.process import SandboxLimits, limit_maxima, limit_problems
from guardagent.sandbox.zygote import runs_nice

if TYPE_CHECKING:  # the model stack and Chroma load when a run first needs them
    from langchain_core.language_models import BaseChatModel

    from guardagent.memory_store.store import MemoryStore

F = TypeVar("F", bound=Callable[..., Any])
_MAX_SHOWN = 80


class RunRefused(ValueError):
    """A run asked for something it may not choose; the event is denied with this reason."""


@dataclass(kw_only=True)
class RefusedContext(GuardContext):
    """The deployment's settings for a run whose own choices were refused.

    `profile` is a placeholder that names no file; :func:`profile_of` and :func:`memory_of`
    raise :class:`RunRefused` with `refusal` before anything is loaded.
    """

    refusal: str = ""


def registered_profiles(settings: GuardContext) -> dict[str, str]:
    """Profile names a run may choose -> what to load: the built-ins plus the deployment's."""
    names = {name: name for name in builtin_profiles()}
    names.update(settings.profiles or {})
    return names


def run_choices(context: Any) -> dict[str, Any]:
    """The run-choosable keys present in an untrusted context (a dict or any object)."""
    if context is None:
        return {}
    if isinstance(context, Mapping):
        return {k: context[k] for k in RUN_KEYS if k in context}
    return {k: getattr(context, k) for k in RUN_KEYS if hasattr(context, k)}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def for_run(settings: GuardContext, context: Any) -> GuardContext:
    """The deployment's `settings` with the run's own choices applied, when allowed.

    Args:
        settings: The deployment's settings (trusted).
        context: The run's context as a client or host passed it (untrusted): only
            :data:`RUN_KEYS` are read from it.
    """
    choices = run_choices(context)
    chosen = {k: v for k, v in choices.items() if v is not None}
    update: dict[str, Any] = {}
    if "profile" in chosen:
        known = registered_profiles(settings)
        name = chosen["profile"]
        if not isinstance(name, str) or name not in known:
            return _refused(
                settings,
                f"profile {_shown(name)} is not a profile this deployment serves; a run may "
                f"choose one of: {', '.join(sorted(known))}",
            )
        update["profile"] = known[name]
    if "user_facts" in chosen:
        try:
            update["user_facts"] = normalize_facts(chosen["user_facts"])
        except ValueError as exc:
            return _refused(settings, f"user_facts refused: {exc}")
    return replace(settings, **update) if update else settings


def _refused(settings: GuardContext, reason: str) -> RefusedContext:
    values = {f.name: getattr(settings, f.name) for f in fields(settings)}
    values.update(profile="<refused>", refusal=reason, user_facts=None)
    return RefusedContext(**values)


@lru_cache(maxsize=8)
def _from_env(raw: tuple[str | None, ...]) -> GuardContext:
    names = (s.name for s in GUARD_SETTINGS)
    env = {n: v for n, v in zip(names, raw, strict=True) if v is not None}
    return GuardContext.from_env(env)


def deployment_settings() -> GuardContext:
    """The deployment's settings from the environment (`GUARDAGENT_*`), parsed once per value."""
    return _from_env(snapshot(GUARD_SETTINGS))


def context_of(runtime: Runtime[Any]) -> GuardContext:
    """The run's settings: a trusted `GuardContext` as given, else the deployment's + run choices.

    As a subgraph of a host graph we receive the host's context as it is, often a plain dict
    with the host's own keys: only :data:`RUN_KEYS` are read from it and the rest is left to
    the host. Settings bound by :func:`bind_settings` arrive here as a `GuardContext`.
    """
    ctx: Any = runtime.context
    if isinstance(ctx, GuardContext):
        return ctx
    return for_run(deployment_settings(), ctx)


def bind_settings(settings: GuardContext | None) -> Callable[[F], F]:
    """Bind deployment settings to a node or edge function of the guard graph.

    The bound function sees, instead of an untrusted context, `settings` with the run's own
    choices applied (:func:`for_run`); a trusted `GuardContext` passed by a Python caller
    still wins. With `settings=None` functions are returned unchanged (the environment's
    settings apply).
    """

    def bind(func: F) -> F:
        if settings is None:
            return func

        def settled(runtime: Runtime[Any]) -> Runtime[Any]:
            if isinstance(runtime.context, GuardContext):
                return runtime
            return runtime.override(context=for_run(settings, runtime.context))

        def sync_bound(state: Any, runtime: Runtime[Any]) -> Any:
            return func(state, settled(runtime))

        async def async_bound(state: Any, runtime: Runtime[Any]) -> Any:
            return await func(state, settled(runtime))

        # An async node stays one (its run holds no thread); a sync one stays sync.
        bound: Callable[..., Any] = async_bound if inspect.iscoroutinefunction(func) else sync_bound

        # Name and doc only: `__wrapped__` would make LangGraph read func's signature.
        bound.__name__ = getattr(func, "__name__", "node")
        bound.__qualname__ = getattr(func, "__qualname__", bound.__name__)
        bound.__doc__ = func.__doc__
        return cast(F, bound)

    return bind


def _check(ctx: GuardContext) -> None:
    if isinstance(ctx, RefusedContext):
        raise RunRefused(ctx.refusal)


_RUN_PROFILES: ContextVar[dict[str, Profile] | None] = ContextVar(
    "guardagent_run_profiles", default=None
)


@contextmanager
def one_run() -> Iterator[None]:
    """Within: the nodes of one guard run read each profile once (see :func:`profile_of`).

    Set by :mod:`guardagent.guard.runs` around a run of the graph (a context variable: concurrent
    runs each have their own; LangGraph runs every node in a copy of the caller's context,
    which shares the run's dict).
    """
    token = _RUN_PROFILES.set({})
    try:
        with fingerprints_per_run():
            yield
    finally:
        _RUN_PROFILES.reset(token)


def profile_of(ctx: GuardContext) -> Profile:
    """The run's guard profile.

    Within :func:`one_run`, loaded once per run: `load_profile` stats every file of the
    profile's folder to notice an edit (~0.1 ms), and a run asks from each of its nodes. One
    run then sees one version of the profile from its first node to its decision (an edit
    made during the run applies from the next run, as with any edit made during a node);
    the cache dies with the run, so nothing is kept between events or shared between runs.

    Raises:
        RunRefused: the run chose a profile this deployment does not serve.
    """
    _check(ctx)
    run = _RUN_PROFILES.get()
    if run is None:
        return load_profile(ctx.profile)
    profile = run.get(ctx.profile)
    if profile is None:
        profile = run[ctx.profile] = load_profile(ctx.profile)
    return profile


def memory_of(ctx: GuardContext) -> MemoryStore:
    """The run's seeded memory store (the deployment's location, never the run's)."""
    _check(ctx)
    from guardagent.memory_store.seed import open_memory

    return open_memory(ctx.profile, ctx.memory_dir, ctx.memory_url, ctx.memory_key)


def model_of(ctx: GuardContext) -> BaseChatModel | None:
    """The run's chat model, or None when offline."""
    return resolve_model(ctx.model, ctx.base_url)


def limits_of(ctx: GuardContext) -> SandboxLimits:
    """Sandbox limits for the run."""
    return SandboxLimits(wall_seconds=ctx.timeout_seconds)


def check_settings(ctx: GuardContext) -> None:
    """Fail fast on deployment settings that every run would refuse.

    Raises:
        ValueError: a timeout above the sandbox's maximum (raise the maximum with
            `guardagent.sandbox.process.set_limit_maxima`), user facts that are not a
            JSON object, or a `GUARDAGENT_SANDBOX_NICE` that is not an integer.
    """
    problems = [
        p.replace("wall_seconds", "timeout_seconds")
        for p in limit_problems(limits_of(ctx), limit_maxima())
    ]
    try:
        runs_nice()
    except ValueError as exc:
        problems.append(str(exc))
    if ctx.user_facts is not None:
        try:
            normalize_facts(ctx.user_facts)
        except ValueError as exc:
            problems.append(f"user_facts: {exc}")
    if problems:
        raise ValueError("invalid guard settings: " + "; ".join(problems))
