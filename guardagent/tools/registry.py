"""The toolbox: the only functions a guard program may call.

The coder prompt is generated from this registry (signature + docstring of each entry), so
what the LLM is told and what the sandbox binds can never drift apart.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, overload

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ToolSpec:
    """One trusted function and how it is presented to the coder.

    Attributes:
        name: Name the program calls it by.
        func: The trusted implementation (runs with full Python, outside the restrictions).
        group: Free-form grouping used to order the prompt listing.
    """

    name: str
    func: Callable[..., Any]
    group: str = "custom"

    @property
    def signature(self) -> str:
        """`name(arg: type, ...) -> type` as the coder should call it."""
        try:  # resolve `from __future__ import annotations` strings into real types
            sig = inspect.signature(self.func, eval_str=True)
        except (NameError, TypeError):
            sig = inspect.signature(self.func)
        return f"{self.name}{sig}"

    @property
    def doc(self) -> str:
        """The docstring, dedented; the coder reads it as the function's contract."""
        return inspect.getdoc(self.func) or ""


class Toolbox:
    """An ordered, name-unique set of trusted functions.

    Profiles select a subset by name; users add their own with :meth:`register`.
    """

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._specs: dict[str, ToolSpec] = {}
        for spec in specs:
            self._add(spec)

    def _table(self) -> dict[str, ToolSpec]:
        """The entries, for every read and write (the default toolbox loads its built-ins here)."""
        return self._specs

    def _add(self, spec: ToolSpec) -> None:
        if not spec.name.isidentifier() or spec.name.startswith("_"):
            raise ValueError(f"toolbox name {spec.name!r} must be a public Python identifier")
        table = self._table()
        if spec.name in table and table[spec.name].func is not spec.func:
            raise ValueError(f"toolbox already has a function named {spec.name!r}")
        table[spec.name] = spec

    @overload
    def register(self, func: F, *, name: str | None = None, group: str = "custom") -> F: ...

    @overload
    def register(
        self, func: None = None, *, name: str | None = None, group: str = "custom"
    ) -> Callable[[F], F]: ...

    def register(
        self, func: F | None = None, *, name: str | None = None, group: str = "custom"
    ) -> F | Callable[[F], F]:
        """Add a trusted function; usable bare (`@tb.register`) or with options.

        The function must have a docstring: it is the only thing the coder knows about it.
        """

        def decorate(f: F) -> F:
            if not inspect.getdoc(f):
                raise ValueError(f"toolbox function {f.__name__!r} needs a docstring")
            self._add(ToolSpec(name=name or f.__name__, func=f, group=group))
            return f

        return decorate(func) if func is not None else decorate

    def subset(self, names: Iterable[str]) -> Toolbox:
        """A toolbox holding only `names`, in that order; unknown names are an error."""
        names = list(names)
        missing = [n for n in names if n not in self._table()]
        if missing:
            known = ", ".join(sorted(self._table()))
            raise KeyError(f"unknown toolbox function(s) {missing}; known: {known}")
        return Toolbox(self._table()[n] for n in names)

    def merged(self, other: Toolbox) -> Toolbox:
        """Entries of this toolbox, then those of `other` it does not already hold."""
        return Toolbox([*self, *(s for s in other if s.name not in self._table())])

    @property
    def names(self) -> frozenset[str]:
        """Every name a program must not rebind."""
        return frozenset(self._table())

    def functions(self) -> dict[str, Callable[..., Any]]:
        """Name -> implementation, for binding into the sandbox."""
        return {n: s.func for n, s in self._table().items()}

    def function(self, name: str) -> Callable[..., Any] | None:
        """The implementation registered under `name`, or None."""
        spec = self._table().get(name)
        return None if spec is None else spec.func

    def describe(self) -> str:
        """The toolbox listing for the coder prompt: signature and docstring of each entry."""
        blocks = []
        for spec in sorted(self._table().values(), key=lambda s: s.group):
            doc = "\n".join("    " + line for line in spec.doc.splitlines())
            blocks.append(f"{spec.signature}\n{doc}")
        return "\n\n".join(blocks)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._table().values())

    def __contains__(self, name: object) -> bool:
        return name in self._table()

    def __len__(self) -> int:
        return len(self._table())


class _DefaultToolbox(Toolbox):
    """The default toolbox: the built-ins of :mod:`guardagent.tools.builtins`, added on first use.

    Not at import: the built-ins live in modules (the readers, the policy predicates) that
    import this one, so filling the toolbox while they load would read half-made modules, and
    registering each where it is defined made the order (the coder's listing) follow whichever
    module a process imported first. The first read or registration loads them all, in the
    list's order, before anything else; a user's :func:`guard_tool` functions come after.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.RLock()
        self._state = "empty"  # -> "loading" (this thread, re-entered) -> "loaded"

    def _table(self) -> dict[str, ToolSpec]:
        if self._state != "loaded":
            with self._lock:  # another thread's load finishes before this one reads
                if self._state == "empty":
                    self._state = "loading"
                    try:
                        builtins = importlib.import_module("guardagent.tools.builtins")
                        builtins.register_builtins(self)
                        self._state = "loaded"
                    finally:
                        if self._state == "loading":
                            self._state = "empty"  # failed: the next use tries again
        return self._specs


DEFAULT_TOOLBOX: Toolbox = _DefaultToolbox()
"""Every built-in function plus whatever users register with :func:`guard_tool`."""


@overload
def guard_tool(func: F, *, name: str | None = None, group: str = "custom") -> F: ...


@overload
def guard_tool(
    func: None = None, *, name: str | None = None, group: str = "custom"
) -> Callable[[F], F]: ...


def guard_tool(
    func: F | None = None, *, name: str | None = None, group: str = "custom"
) -> F | Callable[[F], F]:
    """Register a trusted function in the default toolbox so profiles can name it.

    Example:
        ```python
        @guard_tool
        def is_weekend(date: str) -> bool:
            \"\"\"True when the ISO date falls on a Saturday or Sunday.\"\"\"
            ...
        ```
    """
    return DEFAULT_TOOLBOX.register(func, name=name, group=group)
