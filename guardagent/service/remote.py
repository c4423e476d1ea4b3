"""`guardagent check --server URL` under click: the JSON of a local check, from the service.

The plain form of the call never gets here: `guardagent` hands it to
:mod:`guardagent.service.hook` before importing click. This is the path of everything else
(a call through `guardagent.cli.main`, or one with a problem click reports), and it shares
the hook's reading, sending and printing, so both paths answer alike. Exit status as
`check`'s: 0 allowed, 1 denied (also when the service cannot be reached or could not decide:
fail closed), 2 input that could not be read (a missing or non-JSON file here, or a request
the service could not read).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from guardagent.service.client import DECISION_FIELDS, GuardClient, trace_text
from guardagent.service.hook import consent_records, send, unknown_fields


def _trace_text(trace_file: str) -> str:
    if trace_file == "-":
        raw = sys.stdin.buffer.read()
    elif Path(trace_file).is_file():
        raw = Path(trace_file).read_bytes()
    else:
        raise click.BadParameter(f"no such file: {trace_file}", param_hint="--trace")
    return trace_text(raw)  # its bytes, as the local check reads them


def _consent(consent_file: str | None) -> list[Any] | None:
    if consent_file is None:
        return None
    try:
        return consent_records(consent_file)
    except (OSError, ValueError, RecursionError) as exc:
        raise click.BadParameter(f"{consent_file}: {exc}", param_hint="--consent") from None


def check_remote(
    server: str,
    profile: str,
    *,
    agent_input: str | None,
    agent_output: str | None,
    trace_file: str | None,
    consent_file: str | None,
    thread_id: str | None,
    idempotency_key: str | None,
    quiet: bool,
    fields: str | None,
    task: Any = None,
    rules: str = "all",
) -> int:
    """Send the event or trace, print the decision JSON, return the exit status.

    Raises:
        click.UsageError: an argument the service path cannot use.
    """
    unknown = unknown_fields(fields)
    if unknown:
        raise click.BadParameter(
            f"unknown field(s) {', '.join(unknown)}; a decision has {', '.join(DECISION_FIELDS)}",
            param_hint="--fields",
        )
    try:
        client = GuardClient(server)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--server") from None
    options = {
        "profile": profile,
        "thread_id": thread_id,
        "idempotency_key": idempotency_key,
        "quiet": quiet,
        "fields": fields,
        "rules": rules,
    }
    inputs: dict[str, Any]
    if trace_file is not None:
        consent = _consent(consent_file)  # files first, as the hook reads them
        inputs = {"trace": _trace_text(trace_file), "consent": consent, "task": task}
    else:
        inputs = {"input": agent_input or "", "output": agent_output or ""}
    return send(client, options, inputs)
