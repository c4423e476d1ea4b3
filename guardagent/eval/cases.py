"""The case file format (JSONL, one event per line) shared by eval, export and outside checks."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from guardagent.readers.textio import REPLACEMENT, has_surrogates, json_error, sniff_encoding


class Case(BaseModel):
    """One labelled event of a target agent.

    `inaccessible` is the expected denial detail for access control, `violations` for rule
    checks; `answer` is what must pass through unchanged when the event is allowed.
    """

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    agent_input: str
    agent_output: str
    label: Literal[0, 1]
    inaccessible: dict[str, list[str]] | None = None
    violations: list[str] | None = None
    answer: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _details_only_when_denied(self) -> Case:
        if self.label == 0 and (self.inaccessible or self.violations):
            raise ValueError("a label-0 case cannot list inaccessible columns or violations")
        return self


class CaseFileError(ValueError):
    """A case file with malformed lines; `problems` holds (line number, message) pairs."""

    def __init__(self, path: str, problems: list[tuple[int, str]]) -> None:
        self.path = path
        self.problems = problems
        shown = "\n".join(f"  line {n}: {msg}" for n, msg in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"{path}: {len(problems)} malformed line(s)\n{shown}{more}")


def _surrogate_fields(raw: Any, where: str = "") -> list[str]:
    """Where a parsed line holds a lone surrogate (a JSON escape of half a surrogate pair)."""
    if isinstance(raw, str):
        return [where or "case"] if has_surrogates(raw) else []
    if isinstance(raw, dict):
        items = list(raw.items())
    elif isinstance(raw, list):
        items = list(enumerate(raw))
    else:
        return []
    return [f for k, v in items for f in _surrogate_fields(v, f"{where}.{k}" if where else str(k))]


def parse_case_line(line: str) -> Case:
    """Parse one JSONL line; raises ValueError with a one-line reason."""
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({json_error(exc)})") from None
    if not isinstance(raw, dict):
        raise ValueError("each line must be a JSON object")
    bad = _surrogate_fields(raw)
    if bad:
        raise ValueError(
            f"{', '.join(bad)}: holds a lone \\udXXX surrogate escape, which is not a "
            "character (write the character itself, or a surrogate pair)"
        )
    try:
        return Case.model_validate(raw)
    except ValidationError as exc:
        reasons = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'case'}: {e['msg']}" for e in exc.errors()
        )
        raise ValueError(reasons) from None


def read_cases(
    path: str | Path, *, skip_invalid: bool = False
) -> tuple[list[Case], list[tuple[int, str]]]:
    """Read a case file, validating every line before any work starts.

    Returns:
        The cases and the (line number, reason) of each skipped line.

    Raises:
        CaseFileError: when a line is malformed and `skip_invalid` is False, or when ids repeat.
        FileNotFoundError: when the file does not exist.
    """
    cases: list[Case] = []
    problems: list[tuple[int, str]] = []
    seen: set[str] = set()
    for number, line, undecodable in _numbered_lines(Path(path).read_bytes()):
        if undecodable:
            problems.append((number, undecodable))
            continue
        if not line.strip():
            continue
        try:
            case = parse_case_line(line)
        except ValueError as exc:
            problems.append((number, str(exc)))
            continue
        if case.id in seen:
            problems.append((number, f"duplicate id {case.id!r}"))
            continue
        seen.add(case.id)
        cases.append(case)
    if problems and not skip_invalid:
        raise CaseFileError(str(path), problems)
    return cases, problems


def _numbered_lines(data: bytes) -> Iterator[tuple[int, str, str | None]]:
    """(line number, text, problem) of each line of a case file; `problem` when it is no text.

    UTF-8 files (the format's encoding; a BOM is allowed) are decoded line by line, so a line
    with stray bytes is reported with its number while the others are read as usual. UTF-16
    and UTF-32 files (recognised by their BOM, or UTF-16 by its NUL bytes) are decoded whole.
    """
    encoding, skip = sniff_encoding(data)
    if encoding == "utf-8":
        for number, raw in enumerate(data[skip:].split(b"\n"), start=1):
            try:
                yield number, raw.decode("utf-8"), None
            except UnicodeDecodeError as exc:
                yield (
                    number,
                    "",
                    (
                        f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of "
                        "the line); save the case file as UTF-8"
                    ),
                )
        return
    text = data[skip:].decode(encoding, errors="replace")
    genuine = data[skip:].decode(encoding, errors="ignore").split("\n")
    for number, line in enumerate(text.split("\n"), start=1):
        kept = genuine[number - 1] if number <= len(genuine) else ""
        if line.count(REPLACEMENT) > kept.count(REPLACEMENT):
            yield number, "", f"not valid {encoding.upper()}: undecodable bytes"
        else:
            yield number, line, None


def write_cases(path: str | Path, cases: Iterable[Case]) -> int:
    """Write cases as JSONL; returns how many were written."""
    count = 0
    with open(path, "w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(case.model_dump_json(exclude_none=False) + "\n")
            count += 1
    return count


def iter_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Yield the JSON objects of a JSONL file, skipping blank lines."""
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
