"""The one exit-status table of every `guardagent` command (docs/reference/exit-status.md).

A shell hook or a CI script acts on the status alone, so a status must mean the same thing
whichever command, and whichever argument, produced it: a denial must never look like a
typo (both would block, but only one is worth a human's look), and an unreadable input
must never look like success.
"""

from __future__ import annotations

import click

OK = 0
"""Done; for a decision: allowed."""
DENIED = 1
"""Denied (the output says why), or the check the command runs did not pass."""
UNREADABLE = 2
"""Input or a setting it could not read or refused to read (nothing was decided from it)."""
FAILED_CLOSED = 3
"""`eval`: at least `--max-failed-closed` of the decisions could not be made."""
INTERRUPTED = 130
"""Ctrl-C (SIGINT), at any point, start-up included (128 + the signal's number, as shells)."""

TABLE = """\b
Exit status (every guardagent command):
  0    done; a decision: allowed
  1    denied (the output says why), or the check did not pass
  2    input or a setting it could not read: a missing or unreadable
       file, a bad option, profile, policy or setting, or evidence the
       guard refused to read (denied; the JSON's `unreadable` says what)
  3    eval: at least --max-failed-closed of the decisions failed closed
  130  interrupted (Ctrl-C)"""
"""The table as each command's `--help` shows it (click's `\\b` keeps its lines)."""


class InputError(click.ClickException):
    """A command could not read its input or a setting: one line on stderr, exit status 2.

    Click's own usage errors exit 2 too, so a caller sees one status for "what you gave me
    does not read", whichever argument was wrong.
    """

    exit_code = UNREADABLE


def epilog(*lines: str) -> str:
    """A command's `--help` epilog: its own lines (if any), then the common table."""
    own = "\b\n" + "\n".join(lines) + "\n\n" if lines else ""
    return own + TABLE
