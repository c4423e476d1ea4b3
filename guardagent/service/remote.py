"""`guardagent check --server URL`: the same JSON as a local check, decided by the service.

Imports only the standard library, click and the CLI's text decoding, so a shell hook pays
the interpreter's start-up, not the guard's. Exit status as `check`'s: 0 allowed, 1 denied
(also when the service cannot be reached or could not decide: fail closed), 2 input that
could not be read (a missing or non-JSON file here, or a request the service could not read).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from guardagent.eval.textio import decode_bytes, dumps_safe
from guardagent.service.client import GuardClient, ServiceError, unreachable_denial

EXIT_ALLOW, EXIT_DENY, EXIT_UNREADABLE = 0, 1, 2
_UNREADABLE_STATUS = (400, 413)


def _trace_text(trace_file: str) -> str:
    if trace_file == "-":
        raw = sys.stdin.buffer.read()
    elif Path(trace_file).is_file():
        raw = Path(trace_file).read_bytes()
    else:
        raise click.BadParameter(f"no such file: {trace_file}", param_hint="--trace")
    return decode_bytes(raw).text


def _consent(consent_file: str | None) -> list[Any] | None:
    if consent_file is None:
        return None
    try:
        records = json.loads(decode_bytes(Path(consent_file).read_bytes()).text)
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"{consent_file}: {exc}", param_hint="--consent") from None
    if not isinstance(records, list):
        raise click.BadParameter(f"{consent_file}: not a JSON list", param_hint="--consent")
    return records


def check_remote(server: str, profile: str, *, agent_input: str | None,
                 agent_output: str | None, trace_file: str | None, consent_file: str | None,
                 thread_id: str | None, idempotency_key: str | None, quiet: bool,
                 fields: str | None) -> int:  # fmt: skip
    """Send the event or trace, print the decision JSON, return the exit status.

    Raises:
        click.UsageError: an argument the service path cannot use.
        click.ClickException: the service refused the request (token, reused key).
    """
    try:
        client = GuardClient(server)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--server") from None
    try:
        if trace_file is not None:
            decision = client.check_trace(trace=_trace_text(trace_file), profile=profile,
                                          consent=_consent(consent_file), thread_id=thread_id,
                                          idempotency_key=idempotency_key)  # fmt: skip
        else:
            decision = client.check(agent_input or "", agent_output or "", profile=profile,
                                    thread_id=thread_id, idempotency_key=idempotency_key)
    except ServiceError as exc:
        if exc.status in _UNREADABLE_STATUS:
            click.echo(f"error: {exc}", err=True)
            return EXIT_UNREADABLE
        if exc.status:  # refused: a wrong token, an idempotency key reused
            raise click.ClickException(str(exc)) from None
        click.echo(f"error: {exc}", err=True)
        decision = unreachable_denial(str(exc), profile)
    shown = dict(decision)
    if quiet:
        shown.pop("program", None)
    if fields:
        wanted = [name.strip() for name in fields.split(",") if name.strip()]
        unknown = [name for name in wanted if name not in decision]
        if unknown and "allowed" in decision and "label" in decision and "rules" in decision:
            raise click.BadParameter(f"unknown field(s) {', '.join(unknown)}; a decision has "
                                     f"{', '.join(decision)}", param_hint="--fields")  # fmt: skip
        shown = {name: shown[name] for name in wanted if name in shown}
    click.echo(dumps_safe(shown))
    return EXIT_ALLOW if decision.get("allowed") is True else EXIT_DENY
