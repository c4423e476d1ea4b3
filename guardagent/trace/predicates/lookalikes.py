"""Navigation scopes whose wildcards never vouch for an internationalised host label.

``admin.*.example`` admits ``admin.shоp.example`` (a Cyrillic ``о``: the IDNA label
``xn--shp-...``), a host another party registers and a browser may show as
``admin.shop.example``; ``*.shop.example`` admits ``аdmin.shop.example`` the same way.
Which Unicode label renders like which ASCII one depends on the browser and its fonts, so
no table of look-alikes is trusted here: an ``xn--`` label is inside a scope only when the
scope writes that label itself (in Unicode or in IDNA form). A host a scope admits only
through a wildcard over such a label is open (None): a rule that needs the scope either way
(stay inside it, or stay out of it) denies. Redirect targets are judged the same way, since
:func:`~guardagent.trace.sources.temporal.scope_verdict` asks each scope's :meth:`Scope.verdict`.
"""

from __future__ import annotations

from dataclasses import dataclass

from guardagent.trace.sources.temporal import Scope, url_location
from guardagent.trace.text.kinds import Value

IDNA_PREFIX = "xn--"


@dataclass(frozen=True)
class WrittenIdnScope(Scope):
    """A :class:`~guardagent.trace.sources.temporal.Scope` whose wildcards match no ``xn--`` label."""  # noqa: E501

    @classmethod
    def of(cls, spec: str | Scope) -> WrittenIdnScope:
        """Read a scope as :meth:`Scope.of` does (``host[:port][/path][?query][#fragment]``)."""
        base = Scope.of(spec)
        return cls(base.host, base.path, base.query, base.fragment)

    def verdict(self, value: Value) -> bool | None:
        """:meth:`Scope.verdict`, but None when an ``xn--`` label is admitted by a wildcard."""
        verdict = super().verdict(value)
        if verdict is not True:
            return verdict
        where = url_location(value)
        if where is None or IDNA_PREFIX not in where.host:
            return verdict
        written = set(self.host.split(":", 1)[0].split("."))
        idn = (label for label in where.host.split(".") if label.startswith(IDNA_PREFIX))
        return True if all(label in written for label in idn) else None


def idn_wildcard_hosts(values: list[Value | None], scopes: list[WrittenIdnScope]) -> list[str]:
    """The hosts of `values` that a scope admits only through a wildcard over an IDN label."""
    out: list[str] = []
    for value in values:
        where = url_location(value) if value is not None else None
        if value is None or where is None or IDNA_PREFIX not in where.host:
            continue
        if any(Scope.verdict(s, value) is True for s in scopes) and not any(
            s.verdict(value) is True for s in scopes
        ):
            out.append(where.host)
    return out
