"""`guardagent check ... --server URL` without click: the shell hook's fast path.

A hook runs once per agent step, so it pays its process's start-up every time. The
`guardagent` command (:mod:`guardagent.entry`) hands a plain `check --server` call here
before importing click or the CLI: the arguments are read with the same options, the inputs
with the same decoding, the service's answer printed as the same JSON with the same exit
status (0 allowed, 1 denied or no decision, 2 input that could not be read).

Only the plain form is taken: every option known, given once, its value not looking like an
option, the combination valid and every file readable. Anything else (``--help``, a typo, a
missing file, an option refused with ``--server``) returns None before any input is read,
and click runs the command instead, so its messages stay the only ones. Imports: the
standard library, and :mod:`guardagent.readers.textio` only for bytes that are not plain UTF-8.
"""

from __future__ import annotations

import json
import os
import sys

from guardagent.service.client import (
    DECISION_FIELDS,
    GuardClient,
    ServiceError,
    trace_text,
    unreachable_denial,
)

TYPE_CHECKING = False  # not typing's: the hook's path imports no typing (its ~2.5 ms)
if TYPE_CHECKING:
    from typing import Any

VALUE_OPTIONS = {
    "--profile": "profile",
    "--input": "agent_input",
    "--output": "agent_output",
    "--trace": "trace_file",
    "--consent": "consent_file",
    "--task": "task_file",
    "--fields": "fields",
    "--server": "server",
    "--thread-id": "thread_id",
    "--idempotency-key": "idempotency_key",
    "--rules": "rules",
}
FLAG_OPTIONS = {"--quiet": "quiet"}
LEFT_TO_CLICK = frozenset(
    {"--state", "--model", "--base-url", "--memory-dir", "--memory-url", "--help"}
)
"""Options of `check` this path never takes (refused with --server, or help): click answers."""

EXIT_ALLOW, EXIT_DENY, EXIT_UNREADABLE = 0, 1, 2
UNREADABLE_STATUS = (400, 413)


class NotPlain(Exception):
    """The call is not the plain form this path takes: click runs it instead."""


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The options of a plain `check ... --server URL` call; None for anything else."""
    if not argv or argv[0] != "check":
        return None
    options: dict[str, Any] = {}
    rest = iter(argv[1:])
    for arg in rest:
        name, eq, given = arg.partition("=")
        value: str | bool | None = given
        if name in FLAG_OPTIONS and not eq:
            dest, value = FLAG_OPTIONS[name], True
        elif name in VALUE_OPTIONS:
            dest = VALUE_OPTIONS[name]
            if not eq:
                value = next(rest, None)
                if value is None or (value.startswith("-") and value != "-"):
                    return None
        else:
            return None
        if dest in options:
            return None
        options[dest] = value
    if "server" not in options or "profile" not in options:
        return None
    pair = "agent_input" in options and "agent_output" in options
    if ("trace_file" in options) == pair or (
        len({"agent_input", "agent_output"} & set(options)) == 1
    ):
        return None
    if "trace_file" not in options and {"consent_file", "task_file", "rules"} & set(options):
        return None
    if options.get("rules", "all") not in ("all", "applied"):
        return None
    return options


def decoded(data: bytes, what: str) -> str:
    """`data` as text, read as every other input is (a note on stderr for replaced bytes)."""
    if b"\x00" not in data and not data.startswith(b"\xef\xbb\xbf"):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    from guardagent.readers.textio import decode_bytes

    text = decode_bytes(data)
    note = text.note(what)
    if note:
        sys.stderr.write(f"note: {note}\n")
    return text.text


def argument_text(value: str, what: str) -> str:
    """A command-line value as encodable text (`surrogateescape` bytes decoded)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        from guardagent.readers.textio import clean_text

        text = clean_text(value)
        note = text.note(what)
        if note:
            sys.stderr.write(f"note: {note}\n")
        return text.text
    return value


def _read(path: str) -> bytes:
    if not os.path.isfile(path):
        raise NotPlain(path)
    with open(path, "rb") as handle:
        return handle.read()


def consent_records(path: str) -> list[Any]:
    """The `--consent` file: a JSON list (the service checks each record and its signature).

    Raises:
        ValueError: not a file holding a JSON list (or bytes that are not text).
    """
    from guardagent.policy.task_file import host_file_text

    records = json.loads(host_file_text(_read(path)))
    if not isinstance(records, list):
        raise ValueError(f"{path}: not a JSON list")
    return records


def applied_rules(decision: dict[str, Any]) -> dict[str, Any]:
    """The decision listing only the rules that applied (as ``check_trace(rules="applied")``).

    The service lists every rule; this keeps the same ones the local check keeps, those
    whose status is not ``not_applicable``.
    """
    rules = decision.get("rules")
    if not isinstance(rules, list):
        return decision
    kept = [r for r in rules if not (isinstance(r, dict) and r.get("status") == "not_applicable")]
    return {**decision, "rules": kept}


def show(decision: dict[str, Any], quiet: bool, fields: str | None) -> str:
    """The decision as `check` prints it: `--quiet` drops the program, `--fields` picks."""
    shown = dict(decision)
    if quiet:
        shown.pop("program", None)
    wanted = field_names(fields)
    if wanted:
        shown = {name: shown[name] for name in wanted if name in shown}
    text = json.dumps(shown, indent=2, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the answer
        from guardagent.readers.textio import dumps_safe

        text = dumps_safe(shown)
    return text


def field_names(fields: str | None) -> list[str]:
    """The names of `--fields` (checked against :data:`DECISION_FIELDS` by the caller)."""
    return [name.strip() for name in (fields or "").split(",") if name.strip()]


def unknown_fields(fields: str | None) -> list[str]:
    """The names of `--fields` that no decision has."""
    return [name for name in field_names(fields) if name not in DECISION_FIELDS]


def send(client: GuardClient, options: dict[str, Any], inputs: dict[str, Any]) -> int:
    """Send the request, print the decision, return the exit status (no click needed)."""
    profile = options["profile"]
    try:
        if "trace" in inputs:
            decision = client.check_trace_raw(
                trace=inputs["trace"],
                profile=profile,
                consent=inputs.get("consent"),
                thread_id=options.get("thread_id"),
                task=inputs.get("task"),
                idempotency_key=options.get("idempotency_key"),
            )
        else:
            decision = client.check_raw(
                inputs["input"],
                inputs["output"],
                profile=profile,
                thread_id=options.get("thread_id"),
                idempotency_key=options.get("idempotency_key"),
            )
    except ServiceError as exc:
        if exc.status in UNREADABLE_STATUS:
            sys.stderr.write(f"error: {exc}\n")
            return EXIT_UNREADABLE
        if exc.status:  # refused: a wrong token, an idempotency key reused (click: "Error:")
            sys.stderr.write(f"Error: {exc}\n")
            return EXIT_DENY
        sys.stderr.write(f"error: {exc}\n")
        decision = unreachable_denial(str(exc), profile)
    if options.get("rules") == "applied":  # check_trace(rules="applied"), on the answer
        decision = applied_rules(decision)
    sys.stdout.write(show(decision, bool(options.get("quiet")), options.get("fields")) + "\n")
    sys.stdout.flush()
    if decision.get("allowed") is True:
        return EXIT_ALLOW
    return EXIT_UNREADABLE if decision.get("unreadable") else EXIT_DENY  # as a local check


def _files(options: dict[str, Any]) -> dict[str, Any]:
    """Every input that is a file, read before stdin; any problem leaves the call to click."""
    inputs: dict[str, Any] = {}
    try:
        if "consent_file" in options:
            inputs["consent"] = consent_records(options["consent_file"])
        if "task_file" in options:
            from guardagent.policy.task_file import read_task_file

            inputs["task"] = read_task_file(options["task_file"])
    except (OSError, ValueError, RecursionError):  # TaskFileError is a ValueError
        raise NotPlain("a file click reports on") from None
    trace = options.get("trace_file")
    if trace is not None and trace != "-" and not os.path.isfile(trace):
        raise NotPlain(trace)
    for key in ("agent_input", "agent_output"):
        value = options.get(key)
        if (
            value is not None
            and value.startswith("@")
            and value != "@-"
            and not os.path.isfile(value[1:])
        ):
            raise NotPlain(value)
    return inputs


def _text(value: str, what: str) -> str:
    if value == "@-":
        return decoded(sys.stdin.buffer.read(), what)
    if value.startswith("@"):
        return decoded(_read(value[1:]), what)
    return argument_text(value, what)


def fast_check(argv: list[str]) -> int | None:
    """Run a plain `check --server` call and return its exit status; None: not plain."""
    options = parse(argv)
    if options is None or unknown_fields(options.get("fields")):
        return None
    try:
        client = GuardClient(options["server"])
        inputs = _files(options)
    except (ValueError, NotPlain):
        return None
    trace = options.get("trace_file")
    try:
        if trace is not None:
            raw = sys.stdin.buffer.read() if trace == "-" else _read(trace)
            inputs["trace"] = trace_text(raw)  # its bytes, as the local check reads them
        else:
            inputs["input"] = _text(options["agent_input"], "--input")
            inputs["output"] = _text(options["agent_output"], "--output")
    except (OSError, NotPlain) as exc:  # a file gone since it was checked
        sys.stderr.write(f"Error: cannot read {exc}\n")
        return EXIT_UNREADABLE
    return send(client, options, inputs)
