"""Edits of a demonstration's event whose effect on the readers is known exactly.

A counterfactual is only as good as its expected label, and that label is computed from
what the trusted readers read in the edited event. So every edit here is checked by running
the readers on the result: the readers it means to change must return exactly the intended
values, every other reader must return what it returned on the original event. An edit that
does not come out that way (a layout the edit does not understand) is dropped, never
guessed at.

The parts edited are the ones the guard can regenerate: the host's `User information:`
block, `Identity:` line and `Task:` line of the agent input, a tool-call block in the
middleware's format, the final-answer lines of a web agent, and text appended to or inserted
into the agent output.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from guardagent.readers.user_facts import USER_INFO_LABEL
from guardagent.sandbox.dataflow import reader_slots
from guardagent.tools.registry import Toolbox


class Event(NamedTuple):
    """An (agent_input, agent_output) pair."""

    agent_input: str
    agent_output: str


class Readers:
    """The readers of a toolbox, run in-process on events (they are trusted code).

    Args:
        toolbox: The profile's toolbox; its readers are found as the data-flow discipline
            finds them (:func:`guardagent.sandbox.dataflow.reader_slots`).
    """

    def __init__(self, toolbox: Toolbox) -> None:
        functions = toolbox.functions()
        slots = reader_slots(toolbox)
        self._readers: dict[str, tuple[Callable[..., Any], str]] = {
            name: (functions[name], reads[0])
            for name, reads in slots.items()
            if set(reads) == {0}  # one event text, as the first argument
        }
        self.complete = len(self._readers) == len(slots)
        """Whether these are all the toolbox's readers (then :meth:`reading` is all a
        program can learn of an event)."""
        self._snapshots: dict[Event, dict[str, str]] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._readers

    def read(self, name: str, event: Event) -> Any:
        """What reader `name` returns on `event` (exceptions propagate)."""
        func, reads = self._readers[name]
        return func(event.agent_input if reads == "agent_input" else event.agent_output)

    def snapshot(self, event: Event) -> dict[str, str]:
        """Every reader's result on `event`, canonically serialised (errors as their type)."""
        out = {}
        for name in self._readers:
            try:
                out[name] = canonical(self.read(name, event))
            except Exception as exc:  # noqa: BLE001 - a reader that fails is a result too
                out[name] = f"<{type(exc).__name__}>"
        return out

    def reading(self, event: Event) -> str:
        """Every reader's result on `event` as one text, a failure by its type and message.

        Under the data-flow discipline a program learns of an event only what the readers
        return (:mod:`guardagent.sandbox.dataflow`), so two events with the same reading are
        decided alike by any program (when :attr:`complete`).
        """
        out = {}
        for name in self._readers:
            try:
                out[name] = canonical(self.read(name, event))
            except Exception as exc:  # noqa: BLE001 - a reader that fails is a result too
                out[name] = f"<{type(exc).__name__}: {exc}>"
        return canonical(out)

    def exact(self, old: Event, new: Event, changed: Mapping[str, Any] | None = None) -> bool:
        """Whether `new` reads as `old` but for the readers in `changed`, which read as given.

        Readers named in `changed` must return exactly the given values; every other reader
        must return what it returned on `old`.
        """
        changed = changed or {}
        if old not in self._snapshots:  # the originals: a few demonstrations, read once
            self._snapshots[old] = self.snapshot(old)
        before, after = self._snapshots[old], self.snapshot(new)
        for name in after:
            want = canonical(changed[name]) if name in changed else before[name]
            if after[name] != want:
                return False
        return all(name in after for name in changed)


def canonical(value: Any) -> str:
    """A value as comparable text (NaN equals NaN here, unlike in Python)."""
    return json.dumps(value, sort_keys=True, default=repr, allow_nan=True)


# --------------------------------------------------------------------------- agent input


def render_facts(facts: Mapping[str, Any]) -> str:
    """A `User information:` block in the syntax `parse_user_info` types back exactly.

    The middleware writes the same syntax (`guardagent.integrations.events`); it is not
    imported from there because that package pulls in the agent middleware and the graph.
    """
    if not facts:
        return "User information:\n   (none)"
    lines = [f"   {key}: {_fact_text(value)}" for key, value in facts.items()]
    return "User information:\n" + ",\n".join(lines)


def _fact_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "none"
    if isinstance(value, int | float) and math.isfinite(value):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)


def with_facts(agent_input: str, facts: Mapping[str, Any]) -> str:
    """The input with its (last) `User information:` block replaced by `facts`."""
    labels = list(USER_INFO_LABEL.finditer(agent_input))
    head = agent_input[: labels[-1].start()] if labels else agent_input + "\n"
    return head.rstrip("\n") + "\n" + render_facts(facts)


def with_task(task: str, facts: Mapping[str, Any]) -> str:
    """An input of the web and tool-call layout: `Task: <task>` then the user's facts."""
    return f"Task: {task}\n" + render_facts(facts)


def with_line(text: str, label: str, line: str, *, last: bool) -> str | None:
    """`text` with its first (or last) line that starts with `label:` replaced by `line`.

    Labels are matched case-insensitively after leading whitespace, as the readers match
    them; None when there is no such line.
    """
    lines = text.split("\n")
    hits = [i for i, raw in enumerate(lines) if _labelled(raw, label)]
    if not hits:
        return None
    lines[hits[-1] if last else hits[0]] = line
    return "\n".join(lines)


def _labelled(line: str, label: str) -> bool:
    head, colon, _ = line.strip().partition(":")
    return bool(colon) and head.strip().lower() == label.lower()


# --------------------------------------------------------------------------- agent output


def with_tool_call(agent_output: str, name: str, args: Mapping[str, Any]) -> str:
    """The output with its pending tool call (or final answer) replaced by `name(args)`.

    The block is written as the middleware writes it: `(Tool call)`, `TOOL:`, one-line
    JSON `ARGS:` (sorted keys), after the conversation.
    """
    cut = max(agent_output.rfind("\n(Tool call)\n"), agent_output.rfind("\n(Final answer)\n"))
    head = agent_output[:cut] if cut >= 0 else agent_output
    body = json.dumps(dict(args), sort_keys=True, ensure_ascii=False)
    return f"{head}\n(Tool call)\nTOOL: {name}\nARGS: {body}"


def appended(agent_output: str, text: str) -> str:
    """The output with `text` as new lines at its end."""
    return f"{agent_output}\n{text}"


def after_first_line(agent_output: str, text: str) -> str:
    """The output with `text` as new lines after its first line."""
    first, newline, rest = agent_output.partition("\n")
    return f"{first}\n{text}{newline}{rest}" if newline else f"{first}\n{text}"


EHR_RULE = "-" * 58


def with_column_read(agent_output: str, table: str, column: str) -> str:
    """The output with one more EHRAgent code cell, which reads `table.column`, at its end.

    EHRAgent's readers take every code block of the output (an attacker can add code, not
    remove the code that ran), so the event reads what it read before plus this column;
    callers check that with :meth:`Readers.exact`.
    """
    code = f"probe_db = LoadDB({table!r})\nprobe = GetValue(probe_db, {column!r})"
    cell = json.dumps({"cell": code}, indent=0)
    return f"{agent_output.rstrip()}\n{EHR_RULE}\n{cell}\n{EHR_RULE}\n"


def ehr_reads_output(reads: Mapping[str, list[str]]) -> str:
    """An EHRAgent run log whose only code cell reads exactly `reads` (table -> columns).

    Used where a probe must read a chosen set of columns and nothing else (the cells of a
    permission table): the demonstration's own code is left out, so nothing it read leaks
    into the probe. Callers still check the result with :meth:`Readers.exact`.
    """
    lines: list[str] = []
    for n, (table, columns) in enumerate(sorted(reads.items())):
        lines.append(f"db{n} = LoadDB({table!r})")
        lines += [f"v{n}_{m} = GetValue(db{n}, {col!r})" for m, col in enumerate(columns)]
    cell = json.dumps({"cell": "\n".join(lines)}, indent=0)
    return f"Solution:\n{EHR_RULE}\n{cell}\n{EHR_RULE}\nTERMINATE\n"
