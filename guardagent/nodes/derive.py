"""The oracle of a prose profile: rules derived from its guard request, for the graph's nodes.

`retrieve` loads a cached derivation (no model call) so that programs in memory verify
against it; `plan` derives the rules once per request when none are cached, before the model
writes the program they will judge (:mod:`guardagent.authoring.derive`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from guardagent.authoring.derive import Derivation, ensure_derived, needs_derivation
from guardagent.context import GuardContext
from guardagent.nodes.runtime import profile_of
from guardagent.profiles.verification import summarize
from guardagent.twins import Wait, in_thread

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

NOT_DERIVED = (
    "the rules of the guard request could not be derived (the profile has no rule table and "
    "no policy model, so a model's program is verified against rules derived from the "
    "request)"
)


def derived_dir(ctx: GuardContext) -> str | None:
    """Where derived rules are cached: the local memory directory (none for a shared one)."""
    if ctx.memory_dir:
        return ctx.memory_dir
    if ctx.memory_url:
        return None
    from guardagent.memory_store.store import default_memory_dir

    return str(default_memory_dir())


def load_derived(ctx: GuardContext) -> None:
    """Register the profile's cached derived rules, if any (never calls a model)."""
    ensure_derived(profile_of(ctx), None, derived_dir(ctx), ctx.memory_key)


def derive_rules(ctx: GuardContext, model: BaseChatModel) -> tuple[int, str | None]:
    """Derive the profile's rules when it needs them: (model calls made, error or None)."""
    profile = profile_of(ctx)
    found: Derivation | None = ensure_derived(profile, model, derived_dir(ctx), ctx.memory_key)
    if found is None:
        return 0, None
    if found.model is None:
        return found.calls, f"{NOT_DERIVED}: {summarize(found.errors)}"
    pending = [r.id for r in found.model.rules if r.review not in ("approved", "edited")]
    if profile.approved_only and len(pending) == len(found.model.rules):
        where = str(found.path) if found.path else "(not saved: no memory key)"
        return found.calls, (
            f"the profile requires sign-off (approved_only) and the {len(pending)} rule(s) "
            f"derived from its guard request await review in {where}: read them with "
            f"`guardagent policy review {where}` and approve each with `guardagent policy "
            f"review {where} --approve RULE_ID` ({', '.join(pending)})"
        )
    return found.calls, None


def derivation_update(state: Any, ctx: GuardContext, model: BaseChatModel) -> dict[str, Any]:
    """The state update of a derivation: its model calls, and the error that ends the run."""
    calls, error = derive_rules(ctx, model)
    update: dict[str, Any] = {}
    if calls:
        update["llm_calls"] = state.get("llm_calls", 0) + calls
    if error:
        update["error"] = error
    return update


def derivation_wait(state: Any, ctx: GuardContext, model: BaseChatModel) -> Wait | None:
    """:func:`derivation_update` as a node's wait, or None when the profile needs none.

    A derivation may call the model and write its cache (once per request), so it runs in a
    worker thread on the async path; a profile with a table or a policy model (the usual
    case) skips it without a wait, exactly as :func:`derive_rules` would return (0, None).
    """
    if not needs_derivation(profile_of(ctx)):
        return None
    return in_thread(derivation_update, state, ctx, model)
