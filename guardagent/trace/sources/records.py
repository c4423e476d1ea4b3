"""The user's own records: a trusted source of values that no message has to repeat.

"Pay my landlord", "send it to Bob", "open my bank's site": the value the agent uses is the
user's, but it is in no user message: it is in their contacts, their own accounts, the
sites they use. The deployer lists such values in the policy's ``values:`` section, and the
host passes the user's facts (``user_facts``) with each check; both are trusted (they come
from deployment configuration and the host, never from a message), and neither is pasted
into any prompt. Provenance predicates count a value found in them as coming from a trusted
source, and say so: "from the user's records: contacts".

Policy format (each section a list of values, or one value; a value a string, number or a
mapping whose leaves are values)::

    values:
      own_accounts: ["CH93 0076 2011 6238 5295 7"]
      contacts: [{name: Bob Meier, email: bob@meier.example}, alice@example.com]
      allowed_sites: [shop.example, docs.shop.example]

Values are read like arguments (:func:`guardagent.trace.found.values.read_scalar`): an IBAN
matches re-spaced, an address case-folded, a URL by its canonical key and, for
``part="host"`` / ``"domain"``, by its host or registered domain; a phrase (a name)
matches the same run of words after normalisation. A free-text record (``"Bob
<bob@meier.example>"``) also holds the typed values inside it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from guardagent.trace.found.values import Value, read_scalar
from guardagent.trace.found.written import is_target
from guardagent.trace.thread.state import flatten

Origin = Literal["values", "user_facts"]
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_SCALARS = (str, int, float, bool)


class RecordsError(ValueError):
    """A ``values:`` section that cannot be used; `problems` lists every problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class RecordSet:
    """One named section of the user's records.

    Attributes:
        name: The section's name (``contacts``).
        origin: ``values`` (the policy) or ``user_facts`` (the host, per check).
        items: The section's scalar values, as written.
    """

    name: str
    origin: Origin
    items: tuple[Any, ...]
    region: str | None = field(default=None, compare=False)
    written: Any = field(default=None, compare=False, repr=False)
    """The section as the policy file wrote it (mappings kept), for dumping."""

    @cached_property
    def _index(self) -> tuple[frozenset[str], frozenset[tuple[str, ...]], frozenset[str]]:
        keys: set[str] = set()
        phrases: set[tuple[str, ...]] = set()
        forms: set[str] = set()
        for item in self.items:
            whole, inner = read_scalar(item, region=self.region)
            for value in ([whole] if whole is not None else []) + inner:
                keys.update(value.keys)
                keys.update(k for _, k in value.parts)
                if value.tokens:
                    phrases.add(value.tokens)
                    forms.add(" ".join(value.text.split()))
        return frozenset(keys), frozenset(phrases), frozenset(forms)

    def holds(self, value: Value) -> bool:
        """Whether the section holds the value (by a key, or as the same run of words).

        A short text (:func:`~guardagent.trace.found.written.is_target`: a path, a name) is held
        only as written, with its punctuation: ``notes.txt`` does not hold ``../notes.txt``.
        """
        keys, phrases, forms = self._index
        if value.keys:
            return not keys.isdisjoint(value.keys)
        if not value.tokens or value.tokens not in phrases:
            return False
        return not is_target(value) or " ".join(value.text.split()) in forms

    def describe(self) -> str:
        """Where the section comes from, for a decision."""
        return self.name if self.origin == "values" else f"{self.name} (the host's user facts)"


@dataclass(frozen=True)
class Records:
    """Every section of the user's records (the policy's ``values:``, the host's facts).

    Attributes:
        sections: The sections, policy sections first.
    """

    sections: tuple[RecordSet, ...] = ()
    _regioned: dict[str | None, tuple[RecordSet, ...]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def from_mapping(cls, raw: Any) -> Records:
        """Read a policy's ``values:`` section; every problem is reported at once.

        Raises:
            RecordsError: not a mapping of section names to lists of values.
        """
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise RecordsError(["values must be a mapping of section name to a list of values"])
        problems: list[str] = []
        sections: list[RecordSet] = []
        for name, items in raw.items():
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                problems.append(f"values: section name {name!r} must be letters, digits, _ or -")
                continue
            leaves = _leaves(items)
            if leaves is None:
                problems.append(f"values.{name}: a list of strings, numbers or mappings of them")
                continue
            sections.append(RecordSet(name, "values", tuple(leaves), written=items))
        if problems:
            raise RecordsError(problems)
        return cls(tuple(sections))

    def with_user_facts(self, facts: Mapping[str, Any] | None, region: str | None) -> Records:
        """These records plus the host's user facts (one section per top-level key)."""
        own = self._regioned.get(region)
        if own is None:  # read once per phone region, not once per check
            own = self._regioned[region] = tuple(
                RecordSet(s.name, s.origin, s.items, region, s.written) for s in self.sections
            )
        sections = list(own)
        for name, value in facts.items() if isinstance(facts, Mapping) else ():
            leaves = _leaves(value)
            if leaves:
                sections.append(RecordSet(str(name), "user_facts", tuple(leaves), region))
        return Records(tuple(sections))

    def holding(self, value: Value) -> list[RecordSet]:
        """The sections that hold a value."""
        return [s for s in self.sections if s.holds(value)]

    def section(self, name: str) -> RecordSet | None:
        """A section by name (the policy's first, then the host's)."""
        return next((s for s in self.sections if s.name == name), None)

    def names(self) -> list[str]:
        """Every section's name."""
        return [s.name for s in self.sections]

    def to_json(self) -> dict[str, Any]:
        """The policy's sections as the file format (the host's facts are left out)."""
        return {
            s.name: s.written if s.written is not None else list(s.items)
            for s in self.sections
            if s.origin == "values"
        }


def _leaves(raw: Any) -> list[Any] | None:
    """The scalar values of a section (a list, a mapping or one value); None if not data."""
    items: Iterable[Any] = raw if isinstance(raw, list | tuple) else [raw]
    out: list[Any] = []
    for item in items:
        if isinstance(item, _SCALARS):
            out.append(item)
        elif isinstance(item, Mapping | list | tuple):
            try:
                leaves = [v for _, v in flatten(item)]
            except RecursionError:
                return None
            if not all(v is None or isinstance(v, _SCALARS) for v in leaves):
                return None
            out.extend(v for v in leaves if v is not None)
        elif item is not None:
            return None
    return out


def section_ref(raw: Any) -> str | None:
    """The section a predicate's value list refers to (``"@contacts"``), or None."""
    if isinstance(raw, str) and raw.startswith("@") and _NAME.fullmatch(raw[1:]):
        return raw[1:]
    return None
