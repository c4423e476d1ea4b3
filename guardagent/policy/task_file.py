"""A task policy file (`guardagent check --trace T --task FILE`): JSON or YAML, any encoding.

The file is the host's: what :meth:`GuardAgent.check_trace`'s ``task=`` takes, written down
(``{"name", "params", "predicates", "rules"}``). It is read here as plain data only; whether
it attaches (known parameters and predicates, rules consistent with the base policy) is the
guard's to decide, and a task that does not attach is denied with the reason. A file that is
not data at all (missing, a directory, neither JSON nor YAML, a YAML tag, nesting over 64
deep, anchors) is refused here with one line: the command exits 2.

Imports only the standard library until the text is not JSON (then PyYAML), so
`check --server` stays a light hook.
"""

from __future__ import annotations

import json
import os
from typing import Any

MAX_TASK_BYTES = 1 << 20
"""A task file over 1 MiB is refused: a task is a few parameters and rules."""


class TaskFileError(ValueError):
    """A task file that cannot be read as plain data (one line, naming the file)."""


def host_file_text(data: bytes) -> str:
    """A host's file (a task, consent records) as text, in any encoding other inputs may have.

    As policy files are (:func:`guardagent.readers.textio.read_text_file`): UTF-8 with or
    without BOM, UTF-16 or UTF-32; bytes that are not text are refused, not repaired (a task
    read with U+FFFD in it would say something its author did not). Plain UTF-8 is decoded
    here without importing the CLI's text module (the hook's fast path).

    Raises:
        ValueError: bytes that are not text in the detected encoding.
    """
    if b"\x00" not in data and not data.startswith(b"\xef\xbb\xbf"):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    from guardagent.readers.textio import strict_text

    return strict_text(data)


def read_task_file(path: str) -> Any:
    """The task document of `path` (any JSON value: the guard judges its shape).

    Raises:
        TaskFileError: the file is missing, a directory, too large, or not plain JSON/YAML.
    """
    if os.path.isdir(path):
        raise TaskFileError(f"--task {path}: a directory, not a file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TASK_BYTES + 1)
    except OSError as exc:
        raise TaskFileError(f"--task {path}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_TASK_BYTES:
        raise TaskFileError(f"--task {path}: over {MAX_TASK_BYTES} bytes")
    try:
        text = host_file_text(data)
    except ValueError as exc:
        raise TaskFileError(f"--task {path}: {exc}") from None
    value = parse_task_text(text, path)
    if value is None:
        raise TaskFileError(
            f"--task {path}: empty (a task is a mapping of name, params, predicates and rules)"
        )
    return value


def parse_task_text(text: str, name: str = "<task>") -> Any:
    """A task document from JSON or YAML text (plain data only).

    Raises:
        TaskFileError: neither JSON nor plain YAML (a tag, nesting over 64 deep, anchors).
    """
    from guardagent.readers.textio import UnreadableJson, load_json

    try:
        return load_json(text)
    except UnreadableJson as exc:
        if exc.kind == "depth":
            raise TaskFileError(f"--task {name}: nested too deep to read") from None
    return _yaml(text, name)


def _yaml(text: str, name: str) -> Any:
    import yaml

    from guardagent.policy.screen import screen_yaml

    screened = screen_yaml(text)
    if screened is not None:
        problem, line, column = screened
        raise TaskFileError(f"--task {name}:{line}:{column}: {problem}")
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f":{where.line + 1}:{where.column + 1}" if where is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise TaskFileError(f"--task {name}{at}: neither JSON nor YAML ({what})") from None
    except RecursionError:
        raise TaskFileError(f"--task {name}: nested too deep to read") from None
    if _shares_nodes(value):
        raise TaskFileError(
            f"--task {name}: YAML anchors and aliases are not allowed (a task is plain data)"
        )
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TaskFileError(
            f"--task {name}: holds a value JSON has no type for ({exc}); "
            "quote dates and write numbers as numbers"
        ) from None
    return value


def _shares_nodes(value: Any) -> bool:
    """True when one list or mapping is reached twice (an alias): sending it would expand it.

    One pass, each container once (the nesting is already bounded by the screen).
    """
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:
                return True
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
    return False
