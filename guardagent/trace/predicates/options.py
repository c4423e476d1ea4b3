"""Options shared by predicates: argument paths, value kinds and URL parts."""

from __future__ import annotations

from typing import Any

from guardagent.trace.found.values import TYPED_KINDS, ValueKind
from guardagent.trace.predicates.fact import PredicateSpecError


def under(path: str, arg: str) -> bool:
    """The flattened argument path is `arg` or inside it (`to[0]`, `payee.iban`)."""
    return path == arg or path.startswith((arg + "[", arg + "."))


def top_arg(path: str) -> str:
    """The top-level argument of a path (``payee.iban``: ``payee``; ``to[0]``: ``to``)."""
    return path.split("[", 1)[0].split(".", 1)[0]


def parse_kinds(raw: Any) -> tuple[ValueKind, ...] | None:
    """Read a `kinds=` option (``"email,iban"`` or a list); None keeps the default."""
    if raw is None:
        return None
    items = [s.strip() for s in raw.split(",")] if isinstance(raw, str) else list(raw)
    known: tuple[ValueKind, ...] = (*TYPED_KINDS, "text")
    bad = [k for k in items if k not in known]
    if bad:
        raise PredicateSpecError(f"unknown value kinds {bad}")
    return tuple(k for k in known if k in items)


def parse_part(raw: Any) -> str | None:
    """Read a `part=` option: a URL's ``host`` or registrable ``domain``."""
    if raw not in (None, "host", "domain"):
        raise PredicateSpecError(f"part must be 'host' or 'domain', not {raw!r}")
    return str(raw) if raw is not None else None
