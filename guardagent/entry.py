"""The `guardagent` command: a plain `check --server` call skips click (a shell hook's path).

`guardagent check ... --server URL` runs once per agent step, so its start-up is the hook's
cost. It is handed to :func:`guardagent.service.hook.fast_check`, which imports the standard
library and the service client only; anything else (every other command, `--help`, a call
click must report on) runs the click command group :func:`guardagent.cli.main`, unchanged.
"""

from __future__ import annotations

import sys

INTERRUPTED = 130
"""Ctrl-C's exit status (:data:`guardagent.exit_status.INTERRUPTED`, not imported: click)."""


def main() -> None:
    """Entry point of the `guardagent` console script.

    Ctrl-C exits 130 wherever it lands, the imports before click runs included: a script
    must not read an interrupted start-up as a denial (1) or a crash.
    """
    try:
        _run(sys.argv[1:])
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        sys.exit(INTERRUPTED)


def _run(argv: list[str]) -> None:
    if argv[:1] == ["check"] and any(a == "--server" or a.startswith("--server=") for a in argv):
        from guardagent.service.hook import fast_check

        code = fast_check(argv)
        if code is not None:
            sys.exit(code)
    from guardagent.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
