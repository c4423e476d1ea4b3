"""Rules derived from a guard request: the oracle of a profile with no table and no policy model.

The paper's way of writing a guard is prose plus a few demonstrations. Three demonstrations
say little about a six-rule request, so a model's program is verified on counterfactual
events too, whose labels must come from a trusted oracle. With a model configured and a
profile that has neither a rule table nor a policy model, that oracle is a policy model the
model derives here from trusted text alone: the deployer's guard request, the agent
specification and the toolbox's documentation, never an event (attacker text cannot shape
the rules that judge it).

The answer goes through the checks `guardagent policy extract` applies: the strict loader
(the file format is the contract), every predicate's assignment parsed and limited to the
profile's readers, `policy check` (z3: no contradictory hard rules); and, beyond extraction,
the profile's labelled demonstrations must get their labels and violations from the derived
rules. Problems go back to the model (bounded retries); a derivation that still fails names
them (the demonstrations it contradicts, by id) and the guard denies.

A derived policy is cached per request fingerprint in the memory directory
(``derived/<profile>-<fingerprint>.yaml``), with an HMAC tag from the memory's key beside it
(``.sig``) and a sign-off version (:mod:`.signoff`): a file whose tag does not check, or
older than its latest sign-off, is never used. Its rules are ``review: proposed``: under a
profile's ``approved_only`` they guard only once approved with ``guardagent policy review
FILE --approve ID`` (which checks the tag first, then signs the decisions at a new version).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from guardagent.authoring.answers import DEFAULT_ATTEMPTS, ask_json
from guardagent.authoring.prompts import DERIVE_SYSTEM, DERIVE_USER
from guardagent.authoring.signoff import (
    DERIVED_DIR,
    SignoffError,
    memory_dir_key,
    next_version,
    read_signed,
    write_signed,
)
from guardagent.counterfactuals.derived import (
    DerivedOracle,
    changed_on_disk,
    derived_entry,
    forget_derived,
    register_derived,
)
from guardagent.counterfactuals.details import same_details
from guardagent.counterfactuals.events import Event
from guardagent.counterfactuals.expressions import ExpressionError, parse_expression
from guardagent.llm import ModelCallError
from guardagent.policy.model import FORMAT, PolicyError, PolicyModel, load_policy_text
from guardagent.profiles.loader import Profile

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

log = logging.getLogger(__name__)


class DerivedAnswer(BaseModel):
    """The model's answer: a policy model's predicates and rules, in the file's shape."""

    model_config = ConfigDict(extra="ignore")

    predicates: list[dict[str, Any]] = Field(min_length=1)
    rules: list[dict[str, Any]] = Field(min_length=1)
    violations: Literal["rules", "targets"] = "rules"


@dataclass
class Derivation:
    """A derivation's outcome.

    Attributes:
        model: The derived policy model (every rule ``proposed``), or None when it failed.
        text: The policy file's text ("" on failure).
        calls: Model calls made (0 when it came from the cache).
        errors: Why it failed: the last answer's problems.
        path: The cache file, when there is one.
    """

    model: PolicyModel | None
    text: str = ""
    calls: int = 0
    errors: list[str] = field(default_factory=list)
    path: Path | None = None


def policy_text(profile: Profile, answer: DerivedAnswer) -> str:
    """The answer as a policy file: every rule proposed, sourced from the guard request."""
    rules = []
    for number, rule in enumerate(answer.rules, start=1):
        entry = {k: v for k, v in rule.items() if k not in ("review", "span")}
        entry.setdefault("id", f"rule-{number}")
        entry["source"] = f"guard request of profile {profile.name}"
        entry["review"] = "proposed"
        rules.append(entry)
    doc = {
        "format": FORMAT,
        "name": f"{profile.name}-derived",
        "version": "1",
        "description": f"Derived by a model from the guard request of {profile.name}; "
        "every rule awaits review.",
        "violations": answer.violations,
        "predicates": answer.predicates,
        "rules": rules,
    }
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def problems(profile: Profile, text: str) -> list[str]:
    """Everything wrong with a derived policy file ([] = it may judge programs)."""
    try:
        model = load_policy_text(text, f"{profile.name}-derived.yaml")
    except PolicyError as exc:
        return [str(issue) for issue in exc.issues]
    functions = profile.tools().functions()
    found: list[str] = []
    for pred in model.predicates:
        how = pred.assigned_by
        if how is None:
            if pred.kind == "condition" or not model.tree.children.get(pred.name):
                found.append(f"predicate {pred.name!r} has no assign: give an expression")
        elif how.expression is not None:
            try:
                parse_expression(how.expression, functions)
            except ExpressionError as exc:
                found.append(f"predicate {pred.name!r}: expression {how.expression!r} {exc}")
        elif how.tool is None or how.tool not in functions or not pred.target:
            found.append(
                f"predicate {pred.name!r}: assign with a toolbox reader needs the "
                "reader's name and a target (group.item); else give an expression"
            )
    from guardagent.policy.check import check_model  # z3: only when rules are derived

    found += [f"policy check: {f.message}" for f in check_model(model).errors]
    return found or disagreements(profile, model)


def disagreements(profile: Profile, model: PolicyModel) -> list[str]:
    """The labelled demonstrations the derived rules decide otherwise, by id."""
    try:
        oracle = DerivedOracle(model, profile)
    except (ExpressionError, ValueError, TypeError, KeyError) as exc:
        return [f"the rules cannot be evaluated: {exc}"]
    found = []
    for demo in profile.demonstrations:
        try:
            got = oracle.decide(Event(demo.agent_input, demo.agent_output))
        except Exception as exc:  # noqa: BLE001 - a reader refuses the demonstration
            found.append(
                f"demonstration {demo.id!r}: the rules cannot decide it "
                f"({type(exc).__name__}: {exc})"
            )
            continue
        if got.label != demo.label or (
            demo.label == 1 and not same_details(got.details, demo.details)
        ):
            found.append(
                f"demonstration {demo.id!r} is labelled {demo.label} {demo.details} "
                f"but the rules give {got.label} {got.details}"
            )
    return found


def derive_policy(
    profile: Profile, model: BaseChatModel, *, attempts: int = DEFAULT_ATTEMPTS
) -> Derivation:
    """Ask `model` for the request's rules and check them (see the module docstring).

    Raises:
        ModelCallError: the model cannot be reached at all.
    """
    user = DERIVE_USER.format(
        guard_request=profile.guard_request,
        agent_specification=profile.agent_specification,
        toolbox=profile.tools().describe(),
    )

    def validate(answer: DerivedAnswer) -> list[str]:
        return problems(profile, policy_text(profile, answer))

    answer = ask_json(
        model,
        DERIVE_SYSTEM,
        user,
        DerivedAnswer,
        validate,
        attempts=attempts,
        run_name="guardagent.authoring.derive",
    )
    if answer.value is None:
        return Derivation(None, calls=answer.attempts, errors=answer.errors)
    text = policy_text(profile, answer.value)
    return Derivation(
        load_policy_text(text, f"{profile.name}-derived.yaml"), text, calls=answer.attempts
    )


# --------------------------------------------------------------------------- cache


def cache_path(profile: Profile, memory_dir: str | Path) -> Path:
    """Where the rules derived for `profile`'s request are kept under a memory directory."""
    return Path(memory_dir) / DERIVED_DIR / f"{profile.name}-{profile.fingerprint[:16]}.yaml"


def save(
    profile: Profile, derivation: Derivation, memory_dir: str | Path, key: str | bytes | None = None
) -> Path | None:
    """Write the derived policy, its tag and its sign-off record (None: no key, nothing written).

    A derivation over an earlier one takes a higher sign-off version, so the earlier file
    put back is a rollback.
    """
    path = cache_path(profile, memory_dir)
    secret = memory_dir_key(path, key, create=True)
    if secret is None or derivation.model is None:
        return None
    version = next_version(path, secret, profile.fingerprint)
    write_signed(path, secret, profile.fingerprint, derivation.text, version)
    return path


def load_cached(
    profile: Profile, memory_dir: str | Path, key: str | bytes | None = None
) -> Derivation | None:
    """The cached derivation for `profile`'s request, if its file is there and its sign-off checks.

    The tag must check and the file must not be older than its latest sign-off (see
    :mod:`.signoff`). A file that does not load or no longer passes :func:`problems` (a
    reviewer's edit that contradicts a demonstration) is not used either.
    """
    path = cache_path(profile, memory_dir)
    secret = memory_dir_key(path, key)
    if secret is None or not path.is_file():
        return None
    try:
        text = read_signed(path, secret, profile.fingerprint).text
    except SignoffError as exc:
        log.warning(
            "derived rules in %s are not used: %s (edited outside `guardagent policy review`?)",
            path,
            exc,
        )
        return None
    found = problems(profile, text)
    if found:
        log.warning("derived rules in %s are not used: %s", path, "; ".join(found[:3]))
        return None
    return Derivation(load_policy_text(text, str(path)), text, path=path)


_NEEDS: dict[tuple[str, ...], bool] = {}


def needs_derivation(profile: Profile) -> bool:
    """Whether `profile`'s programs can only verify against rules derived from its request.

    Not when it names a policy model, its program holds a rule table, or its demonstrations
    hold a labelled denial for every rule its request quotes. Decided once per profile
    content (every event asks).
    """
    key = (profile.fingerprint, *dict.fromkeys(d.code for d in profile.demonstrations))
    if key not in _NEEDS:
        from guardagent.counterfactuals.oracles import table_oracle
        from guardagent.counterfactuals.suite import quoted_problems

        _NEEDS[key] = (
            not profile.policy_model
            and table_oracle(profile) is None
            and bool(quoted_problems(profile)[1])
        )
    return _NEEDS[key]


def ensure_derived(
    profile: Profile,
    model: BaseChatModel | None,
    memory_dir: str | Path | None,
    key: str | bytes | None = None,
) -> Derivation | None:
    """The derived rules of `profile`, registered for its oracle: in process, cache, or new.

    Returns None when the profile needs no derivation (it has a table or a policy model, or
    labelled denials for every rule its request quotes) or none can be made (no model,
    nothing cached).
    """
    if not needs_derivation(profile):
        return None
    if changed_on_disk(profile):  # reviewed (or tampered with) since: read and check again
        forget_derived(profile)
    entry = derived_entry(profile)
    if entry is not None:
        return Derivation(entry[0], path=Path(entry[1]) if entry[1] else None)
    cached = load_cached(profile, memory_dir, key) if memory_dir else None
    if cached is not None and cached.model is not None:
        register_derived(profile, cached.model, str(cached.path))
        return cached
    if model is None:
        return None
    with _DERIVING_LOCK:
        lock = _DERIVING.setdefault(profile.fingerprint, threading.Lock())
    with lock:  # concurrent first events of a request wait for one derivation
        entry = derived_entry(profile)
        if entry is not None:
            return Derivation(entry[0], path=Path(entry[1]) if entry[1] else None)
        try:
            fresh = derive_policy(profile, model)
        except ModelCallError as exc:
            return Derivation(None, calls=1, errors=[f"model call failed: {exc}"])
        if fresh.model is not None:
            fresh.path = save(profile, fresh, memory_dir, key) if memory_dir else None
            register_derived(profile, fresh.model, str(fresh.path or ""))
        return fresh


_DERIVING: dict[str, threading.Lock] = {}
_DERIVING_LOCK = threading.Lock()


def register_cached(profile: Profile) -> None:
    """Register the derivation cached in the deployment's memory, for tools with no guard.

    The memory is ``$GUARDAGENT_MEMORY_DIR``, else the default directory (`profile check`).
    """
    from guardagent.memory_store.store import default_memory_dir

    where = str(default_memory_dir())
    ensure_derived(profile, None, where)


def derived_note(profile: Profile) -> str | None:
    """One line on the rules derived from `profile`'s request, for `profile check`."""
    entry = derived_entry(profile)
    if entry is None:
        return None
    model, where = entry
    approved = sum(r.review in ("approved", "edited") for r in model.rules)
    shown = where or "(in this process only: no memory key)"
    line = (
        f"oracle: {len(model.rules)} rule(s) derived by a model from the guard request, "
        f"{approved} approved; read them with `guardagent policy review {shown}`"
    )
    if profile.approved_only and approved < len(model.rules):
        line += (
            f"; approved_only: only approved rules guard (`guardagent policy review "
            f"{shown} --approve RULE_ID`)"
        )
    return line
