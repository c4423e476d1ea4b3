"""The cells of a permission table, the probes that read them, and which the suite covers.

A permission table (`PERMISSIONS`, role -> table -> columns) decides one cell per role x
table x column of the schema: allowed when the role's list names it, denied otherwise
(columns the table never names, a table's own id, a table the role lacks, and every cell of
an identity the table does not list). A program that verifies is reused with no model call,
so a program whose access list adds or drops a single cell for a single role must fail
verification; probing only the identities of the demonstrations (whose code reads a few
columns) let most such programs through.

So each identity gets probes whose code reads, and only reads, chosen columns: every column
it may read (expected: allowed), every column it may not read and every column of the schema
(expected: denied, the violations listing exactly the denied ones; verification compares
violations as sets, so one cell too many or too few in a program's list is a mismatch). A
cell counts as *probed* only in its own direction: an allowed cell by an allowed case that
reads it (a program that denies it flips the label), a denied cell by a denied case whose
expected violations list it. Coverage is computed from the suite's actual cases, read back
with the trusted readers (:func:`table_coverage`); a cell left unprobed (a name the readers
cannot read, an input without an `Identity:` line to edit) makes the request uncovered, and
verification then trusts no program, naming the cells.

The same holds under a policy model or rules derived from the request (an access oracle
that decides with z3 and has no table to read the cells from): there the cells come from
the oracle's own decisions (:func:`oracle_cells`: each identity reading every column of the
schema at once, the denied cells being the violations it lists), and the same probes and
coverage follow. A cell the oracle cannot decide counts as denied, so its probe, which the
oracle then cannot decide either, is dropped and coverage names the cell.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from guardagent.counterfactuals.events import Event, Readers, ehr_reads_output, with_line
from guardagent.readers.eicu_schema import EICU_COLUMNS
from guardagent.tools.verdict import Violations

if TYPE_CHECKING:
    from guardagent.counterfactuals.oracles import Oracle
    from guardagent.profiles.loader import Profile

UNLISTED_ROLE = "unlisted role"
"""An identity no permission table names: it may read nothing."""
SHOWN_CELLS = 24
"""Missing cells named in a coverage problem (the rest are counted)."""

Table = Mapping[str, Mapping[str, list[str]]]


class Cell(NamedTuple):
    """One role's access to one column of one table."""

    role: str
    table: str
    column: str

    def __str__(self) -> str:
        return f"{self.role}: {self.table}.{self.column}"


class Coverage(NamedTuple):
    """Which cells of a permission table the suite probes.

    Attributes:
        cells: Every cell, with whether the table allows it.
        probed: The cells some case probes in their own direction.
        missing: The cells no case probes, in a stable order.
    """

    cells: dict[Cell, bool]
    probed: set[Cell]
    missing: list[Cell]


def schema_of(table: Table) -> dict[str, frozenset[str]]:
    """The columns a probe may read: the eICU schema plus every column the table names."""
    schema = {t: set(cols) for t, cols in EICU_COLUMNS.items()}
    for cols in table.values():
        for name, listed in cols.items():
            schema.setdefault(name, set()).update(listed)
    return {t: frozenset(cols) for t, cols in schema.items()}


def access_cells(table: Table) -> dict[Cell, bool]:
    """Every role (and an unlisted one) x table x column, with whether the table allows it."""
    schema = schema_of(table)
    return {
        Cell(role, name, column): column in table.get(role, {}).get(name, [])
        for role in [*sorted(table), UNLISTED_ROLE]
        for name in sorted(schema)
        for column in sorted(schema[name])
    }


def probe_reads(
    cells: Mapping[Cell, bool], role: str
) -> Iterator[tuple[str, dict[str, list[str]]]]:
    """(what, reads) of the probes for `role`: its allowed columns, its denied ones, all.

    Only columns of the eICU schema are read (a probe the readers refuse probes nothing);
    a name outside it is left unprobed, and coverage names it.
    """
    mine = [c for c in cells if c.role == role and c.column in EICU_COLUMNS.get(c.table, ())]
    for what, keep in (("may", True), ("may not", False), ("all", None)):
        reads: dict[str, list[str]] = {}
        for cell in mine:
            if keep is None or cells[cell] is keep:
                reads.setdefault(cell.table, []).append(cell.column)
        if reads:
            yield f"reads every column {role!r} {what} read", reads


def access_roles(oracle: Oracle) -> list[str] | None:
    """The identities an access oracle decides for (None: not an access oracle).

    Its own table's (a `PERMISSIONS` table), or those its prober's table lists (a policy
    model's or derived rules' `parse_identity(...) == 'role'` comparisons).
    """
    from guardagent.counterfactuals.oracles import AccessOracle

    for candidate in (oracle, getattr(oracle, "probe", None)):
        if isinstance(candidate, AccessOracle):
            return sorted(candidate.table)
    return None


def oracle_cells(oracle: Oracle) -> dict[Cell, bool] | None:
    """Every cell an access oracle decides, with whether it allows it (None: no access oracle).

    From the table of a `PERMISSIONS` oracle (:func:`access_cells`); else from the oracle's
    decisions: each identity (and an unlisted one) reading every column of the schema at
    once, a cell allowed unless the decision's violations list it (computed once per oracle,
    and kept on it).
    """
    from guardagent.counterfactuals.oracles import PermissionsOracle

    if isinstance(oracle, PermissionsOracle):
        return access_cells(oracle.table)
    roles = access_roles(oracle)
    if roles is None:
        return None
    if oracle.decided_cells is None:
        oracle.decided_cells = _decided_cells(oracle, roles)
    return oracle.decided_cells


def _decided_cells(oracle: Oracle, roles: list[str]) -> dict[Cell, bool]:
    reads = {t: sorted(cols) for t, cols in sorted(EICU_COLUMNS.items())}
    cells: dict[Cell, bool] = {}
    for role in [*roles, UNLISTED_ROLE]:
        event = Event(f"Identity: {role}\nQuestion: which rows are there?", ehr_reads_output(reads))
        try:
            got = oracle.decide(event)
        except Exception:  # noqa: BLE001 - undecidable: every cell denied (and none probed)
            got = None
        for name, cols in reads.items():
            for column in cols:
                details = got.details if got is not None else None
                if got is not None and got.label == 0:
                    allowed = True
                else:  # denied unless the violations say which cells are, and omit this one
                    allowed = isinstance(details, dict) and column not in details.get(name, [])
                cells[Cell(role, name, column)] = allowed
    return cells


def cell_edits(oracle: Oracle, event: Event, done: set[str]) -> Iterator[tuple[str, Event]]:
    """(what, event) probes of each identity not in `done` (which this adds to), on `event`.

    The event's `Identity:` line is set to the identity and its output replaced by one code
    cell reading the probe's columns; an event the readers do not read exactly so is dropped.
    An identity is done once all its probes read exactly on one demonstration: the same
    probes built on the next one would only repeat them at the cost of sandbox runs.
    """
    cells = oracle_cells(oracle)
    roles = access_roles(oracle)
    if cells is None or roles is None:
        return
    for role in [*roles, UNLISTED_ROLE]:
        if role in done:
            continue
        agent_input = with_line(event.agent_input, "Identity", f"Identity: {role}", last=False)
        if agent_input is None:
            return  # no identity line to edit: coverage names every cell
        probes: list[tuple[str, Event]] = []
        for what, reads in probe_reads(cells, role):
            new = Event(agent_input, ehr_reads_output(reads))
            changed = {"parse_identity": role, "ehr_accessed_columns": reads}
            if "ehr_code" in oracle.readers:  # the code text itself: the probe's cell
                changed["ehr_code"] = oracle.readers.read("ehr_code", new)
            if oracle.readers.exact(event, new, changed):
                probes.append((what, new))
        if len(probes) == len(list(probe_reads(cells, role))):
            done.add(role)  # else another demonstration may read exactly; coverage tells
        yield from probes


def probed_cells(
    role: str, accessed: Mapping[str, list[str]], label: int, details: Violations
) -> set[Cell]:
    """The cells one case probes in their own direction (see the module docstring)."""
    if label == 0:
        return {Cell(role, t, c) for t, cols in accessed.items() for c in cols}
    if not isinstance(details, dict):
        return set()
    return {
        Cell(role, t, c) for t, cols in details.items() for c in cols if c in accessed.get(t, [])
    }


def coverage(
    cells: Mapping[Cell, bool], readers: Readers, cases: Iterable[tuple[Event, int, Violations]]
) -> Coverage:
    """The coverage of `cells` by `cases` (events with their expected label and details).

    Each case's identity and accessed columns are read back with the trusted readers (a
    case they cannot read probes nothing); an identity the cells do not list is probed as
    the unlisted role.
    """
    roles = {c.role for c in cells}
    probed: set[Cell] = set()
    for event, label, details in cases:
        try:
            role = readers.read("parse_identity", event)
            accessed = readers.read("ehr_accessed_columns", event)
        except Exception:  # noqa: BLE001 - a case the readers refuse probes no cell
            continue
        role = role if role in roles and role != UNLISTED_ROLE else UNLISTED_ROLE
        probed |= probed_cells(role, accessed, label, details) & cells.keys()
    return Coverage(dict(cells), probed, [c for c in cells if c not in probed])


def coverage_problem(found: Coverage) -> str | None:
    """The coverage problem verification reports, naming the unprobed cells; None if none."""
    if not found.missing:
        return None
    shown = ", ".join(
        f"{cell} ({'allowed' if found.cells[cell] else 'denied'})"
        for cell in found.missing[:SHOWN_CELLS]
    )
    more = len(found.missing) - SHOWN_CELLS
    return (
        f"{len(found.missing)} of the {len(found.cells)} access cells (identity x table x "
        f"column) are probed by no counterfactual: {shown}"
        f"{f' and {more} more' if more > 0 else ''}; "
        "give the demonstrations an `Identity:` line and name only columns of the schema"
    )


def table_coverage(profile: Profile) -> Coverage | None:
    """The coverage of a profile's access cells by its request's suite (None: no access oracle).

    A permission table's, a policy model's or derived rules' (:func:`oracle_cells`).
    """
    from guardagent.counterfactuals.oracles import oracle_for
    from guardagent.counterfactuals.suite import demo_cases, request_suite

    oracle = oracle_for(profile)
    cells = None if oracle is None else oracle_cells(oracle)
    if oracle is None or cells is None:
        return None
    cases = [*demo_cases(profile), *request_suite(profile).cases]
    return coverage(
        cells,
        oracle.readers,
        [(Event(c.agent_input, c.agent_output), c.label, c.details) for c in cases],
    )


def coverage_note(profile: Profile) -> str | None:
    """One line for `guardagent profile check`: how many cells the suite probes, and which not."""
    from guardagent.counterfactuals.oracles import oracle_for

    found = table_coverage(profile)
    oracle = oracle_for(profile)
    return None if found is None or oracle is None else cells_note(found, oracle)


def cells_note(found: Coverage, oracle: Oracle) -> str:
    """One line: how many of the oracle's access cells the cases probe, and which they miss."""
    from guardagent.counterfactuals.oracles import PermissionsOracle

    source = (
        "permission table"
        if isinstance(oracle, PermissionsOracle)
        else f"access cells of the {oracle.source}"
    )
    note = (
        f"{source}: {len(found.probed)} of {len(found.cells)} role x table x column "
        "cells probed by counterfactuals (each in its own direction)"
    )
    if found.missing:
        more = len(found.missing) - SHOWN_CELLS
        note += "; missing: " + ", ".join(str(c) for c in found.missing[:SHOWN_CELLS])
        note += f" and {more} more" if more > 0 else ""
    return note
