"""Secret predicates: a sensitive tool's value reaching a send; a declared secret in any call."""

from __future__ import annotations

from typing import Any

from guardagent.trace.found.secret_forms import Matcher, fold
from guardagent.trace.found.secret_split import Pieces
from guardagent.trace.found.secrets import find_secrets, read_views, search_secrets
from guardagent.trace.predicates.engine import TraceFacts, checks, predicate
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.options import under
from guardagent.trace.predicates.provenance import describe, trusted
from guardagent.trace.sources.provenance import ValueProvenance
from guardagent.trace.sources.temporal import secret_flow as flow_of
from guardagent.trace.thread.state import flatten


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
    sources = tuple(
        dict.fromkeys(s for v in flow.leaked for s in v.sources if facts.labels.sensitive(s.source))
    )
    leaked = "; ".join(_leak(facts, v) for v in flow.leaked[:3])
    if not flow.recipients:
        return Fact(
            "secret_flow",
            True,
            sources,
            f"{leaked}; and the call has no recipient that could be traced",
        )
    unapproved = [r for r in flow.recipients if not trusted(facts, r)]
    if unapproved:
        bad = "; ".join(describe(facts, v) for v in unapproved[:3])
        more = tuple(s for v in unapproved for s in v.sources)
        return Fact(
            "secret_flow", True, tuple(dict.fromkeys(sources + more)), f"{leaked}; sent to {bad}"
        )
    return Fact(
        "secret_flow",
        False,
        sources,
        f"{leaked}; every recipient is from the user, a trusted source or the user's records",
    )


def _leak(facts: TraceFacts, value: ValueProvenance) -> str:
    shown = value.value.text if len(value.value.text) <= 40 else value.value.text[:40] + "..."
    where = ", ".join(f"{s} sensitive" for s in value.sources if facts.labels.sensitive(s.source))
    return f"{shown!r} in {value.path} comes from {where}"


@predicate
def value_from_sensitive(facts: TraceFacts, arg: str = "*") -> Fact:
    """Some value of the argument comes from a sensitive tool (and not from the user)."""
    leaked = [v for v in facts.flow.leaked if arg == "*" or under(v.path, arg)]
    sources = tuple(
        dict.fromkeys(s for v in leaked for s in v.sources if facts.labels.sensitive(s.source))
    )
    detail = "; ".join(_leak(facts, v) for v in leaked[:3]) or "no value from a sensitive tool"
    return Fact("value_from_sensitive", bool(leaked), sources, detail)


@predicate
def secret_in_args(facts: TraceFacts, arg: str = "*", names: Any = None) -> Fact:
    """An argument (or its name) carries a declared secret, in clear, encoded or in pieces.

    See :mod:`guardagent.trace.found.secrets` (the views read, up to four layers deep) and
    :mod:`guardagent.trace.found.secret_split` (pieces in any order, with earlier calls). With
    `names`, only those secrets. Open (None), unless a secret is found: a secret whose
    environment variable is not set, and a value the search could not read to the end
    (encoded more deeply than it reads, or decoding to too much text).
    """
    specs = [s for s in facts.secrets.specs if names is None or s.name in names]
    if not specs:
        return Fact("secret_in_args", False, (), "the policy declares no secret to look for")
    found, missing = type(facts.secrets)(tuple(specs)).resolve()
    matcher = Matcher(found)
    hits: list[str] = []
    joined: list[str] = []
    unread: list[str] = []
    folded: list[str] = []
    for path, value in flatten(facts.trace.call.args):
        if arg != "*" and not under(path, arg):
            continue
        texts = [path] + ([str(value)] if isinstance(value, str | int | float) else [])
        joined.extend(texts[1:])
        for text in texts:
            search = search_secrets(text, found, matcher)
            folded.extend(search.folded)
            where = "its name" if text is path and len(texts) > 1 else "its value"
            hits.extend(
                f"argument {path!r} carries the secret {name!r} "
                f"({'as written' if how == 'plain' else how}, in {where})"
                for name, how in search.hits
            )
            if search.open is not None:
                unread.append(f"argument {path!r} ({where}): {search.open}")
    if not hits and len(joined) > 1:  # split across arguments or list elements, in order
        # glued, and apart: a list of character codes ([115, 107, 45, ...]) reads as codes
        hits.extend(
            f"the argument values joined carry the secret {name!r} "
            f"({'as written' if how == 'plain' else how})"
            for glue in ("", " ")
            for name, how in find_secrets(glue.join(joined), found)
        )
    if not hits:
        hits.extend(_split(facts, found, folded))
    if hits:
        return Fact("secret_in_args", True, (), "; ".join(dict.fromkeys(hits)))
    if unread:
        return Fact(
            "secret_in_args",
            None,
            (),
            "the call cannot be checked for the declared secrets: " + "; ".join(unread[:3]),
        )
    if missing:
        unset = ", ".join(
            f"{s.name!r} (${s.env})" if s.env else repr(s.name) for s in specs if s.name in missing
        )
        return Fact(
            "secret_in_args",
            None,
            (),
            f"the secret(s) {unset} cannot be read (the "
            "environment variable is not set): the call cannot be checked for them",
        )
    return Fact(
        "secret_in_args", False, (), f"no argument carries any of {len(found)} declared secret(s)"
    )


def _split(facts: TraceFacts, found: list[tuple[str, str]], folded: list[str]) -> list[str]:
    """Secrets whose pieces this call's values cover, alone or with the earlier calls'."""
    pieces = Pieces(found)
    now = _merged(pieces.cover(folded), pieces.cover_values(_strings(facts.trace.call.args)))
    out = [
        f"the argument values carry pieces of the secret {name!r} that make most of it "
        "(split, in any order, or cut short)"
        for name, covered in now.items()
        if pieces.whole(name, covered)
    ]
    rest = {name: covered for name, covered in now.items() if not pieces.whole(name, covered)}
    if not rest or not facts.trace.calls:
        return out
    before: dict[str, set[int]] = {}
    senders: dict[str, list[str]] = {}
    for call in facts.trace.calls:
        views = (
            fold(view)
            for text in _strings(call.args)
            for _, view in read_views(text, turned=False)[0]
        )
        alone = pieces.cover_values(_strings(call.args))  # a value that is only a piece
        for name, covered in _merged(pieces.cover(views), alone).items():
            if name in rest:
                before.setdefault(name, set()).update(covered)
                senders.setdefault(name, []).append(repr(call.name[:40]))
    for name, covered in rest.items():
        earlier = before.get(name, set())
        if covered - earlier and pieces.whole(name, covered | earlier):
            calls = ", ".join(dict.fromkeys(senders[name]))
            out.append(
                f"the secret {name!r} is split between this call and earlier call(s) "
                f"{calls} (each carries pieces of it)"
            )
    return out


def _merged(*covers: dict[str, set[int]]) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for cover in covers:
        for name, covered in cover.items():
            out.setdefault(name, set()).update(covered)
    return out


def _strings(args: Any) -> list[str]:
    """An earlier call's argument values that are text (numbers as written)."""
    return [str(v) for _, v in flatten(args) if isinstance(v, str | int | float)]


@checks("secret_in_args")
def _check_secret_in_args(given: dict[str, Any]) -> None:
    names = given["names"]
    if names is not None and not (
        isinstance(names, list | tuple) and all(isinstance(n, str) for n in names)
    ):
        raise PredicateSpecError("names must be a list of secret names")
    if not isinstance(given["arg"], str) or not given["arg"]:
        raise PredicateSpecError("arg must be an argument name, a path or '*'")
