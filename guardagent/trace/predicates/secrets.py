"""Secret predicates: a sensitive tool's value reaching a send; a declared secret in any call."""

from __future__ import annotations

from typing import Any

from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.options import under
from guardagent.trace.predicates.provenance import describe, trusted
from guardagent.trace.provenance import ValueProvenance
from guardagent.trace.secrets import find_secrets
from guardagent.trace.state import flatten
from guardagent.trace.temporal import secret_flow as flow_of


@predicate
def secret_flow(facts: TraceFacts, effects: Any = "send") -> Fact:
    """A sensitive tool's value (not the user's) reaches a send to an unapproved recipient.

    The recipient is unapproved when it is not from the user or a trusted source, or when
    the call has no recipient that can be traced.
    """
    wanted = [e.strip() for e in effects.split(",")] if isinstance(effects, str) else list(effects)
    flow = facts.flow if wanted == ["send"] else flow_of(facts.search, facts.labels, wanted)  # type: ignore[arg-type]
    if not flow.send:
        return Fact("secret_flow", False, (), f"{facts.trace.call.name!r} does not send")
    if not flow.leaked:
        return Fact("secret_flow", False, (), "no value of the call comes from a sensitive tool")
    sources = tuple(dict.fromkeys(s for v in flow.leaked for s in v.sources
                                  if facts.labels.sensitive(s.source)))  # fmt: skip
    leaked = "; ".join(_leak(facts, v) for v in flow.leaked[:3])
    if not flow.recipients:
        return Fact("secret_flow", True, sources, f"{leaked}; and the call has no recipient "
                    "that could be traced")  # fmt: skip
    unapproved = [r for r in flow.recipients if not trusted(facts, r)]
    if unapproved:
        bad = "; ".join(describe(facts, v) for v in unapproved[:3])
        more = tuple(s for v in unapproved for s in v.sources)
        return Fact("secret_flow", True, tuple(dict.fromkeys(sources + more)),
                    f"{leaked}; sent to {bad}")  # fmt: skip
    return Fact("secret_flow", False, sources, f"{leaked}; every recipient is from the user, "
                "a trusted source or the user's records")  # fmt: skip


def _leak(facts: TraceFacts, value: ValueProvenance) -> str:
    shown = value.value.text if len(value.value.text) <= 40 else value.value.text[:40] + "..."
    where = ", ".join(f"{s} sensitive" for s in value.sources if facts.labels.sensitive(s.source))
    return f"{shown!r} in {value.path} comes from {where}"


@predicate
def value_from_sensitive(facts: TraceFacts, arg: str = "*") -> Fact:
    """Some value of the argument comes from a sensitive tool (and not from the user)."""
    leaked = [v for v in facts.flow.leaked if arg == "*" or under(v.path, arg)]
    sources = tuple(dict.fromkeys(s for v in leaked for s in v.sources
                                  if facts.labels.sensitive(s.source)))  # fmt: skip
    detail = "; ".join(_leak(facts, v) for v in leaked[:3]) or "no value from a sensitive tool"
    return Fact("value_from_sensitive", bool(leaked), sources, detail)


@predicate
def secret_in_args(facts: TraceFacts, arg: str = "*", names: Any = None) -> Fact:
    """An argument (or its name) carries a declared secret, in clear or encoded.

    See :mod:`guardagent.trace.secrets` (normalisation; URL, base64 and hex views). With
    `names`, only those secrets. A secret whose environment variable is not set leaves the
    predicate open (None) unless another secret is found.
    """
    specs = [s for s in facts.secrets.specs if names is None or s.name in names]
    if not specs:
        return Fact("secret_in_args", False, (), "the policy declares no secret to look for")
    found, missing = type(facts.secrets)(tuple(specs)).resolve()
    hits: list[str] = []
    joined: list[str] = []
    for path, value in flatten(facts.trace.call.args):
        if arg != "*" and not under(path, arg):
            continue
        texts = [path] + ([str(value)] if isinstance(value, str | int | float) else [])
        joined.extend(texts[1:])
        for text in texts:
            for name, how in find_secrets(text, found):
                where = "its name" if text is path and len(texts) > 1 else "its value"
                hits.append(f"argument {path!r} carries the secret {name!r} "
                            f"({'as written' if how == 'plain' else how}, in {where})")
    if not hits and len(joined) > 1:  # split across arguments or list elements
        hits.extend(f"the argument values joined carry the secret {name!r} "
                    f"({'as written' if how == 'plain' else how})"
                    for name, how in find_secrets("".join(joined), found))  # fmt: skip
    if hits:
        return Fact("secret_in_args", True, (), "; ".join(dict.fromkeys(hits)))
    if missing:
        unset = ", ".join(f"{s.name!r} (${s.env})" if s.env else repr(s.name)
                          for s in specs if s.name in missing)  # fmt: skip
        return Fact("secret_in_args", None, (), f"the secret(s) {unset} cannot be read (the "
                    "environment variable is not set): the call cannot be checked for them")
    return Fact("secret_in_args", False, (), f"no argument carries any of {len(found)} declared "
                "secret(s)")  # fmt: skip


@checks("secret_in_args")
def _check_secret_in_args(given: dict[str, Any]) -> None:
    names = given["names"]
    if names is not None and not (isinstance(names, list | tuple)
                                  and all(isinstance(n, str) for n in names)):  # fmt: skip
        raise PredicateSpecError("names must be a list of secret names")
    if not isinstance(given["arg"], str) or not given["arg"]:
        raise PredicateSpecError("arg must be an argument name, a path or '*'")
