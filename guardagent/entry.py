"""The `guardagent` command: a plain `check --server` call skips click (a shell hook's path).

`guardagent check ... --server URL` runs once per agent step, so its start-up is the hook's
cost. It is handed to :func:`guardagent.service.hook.fast_check`, which imports the standard
library and the service client only; anything else (every other command, `--help`, a call
click must report on) runs the click command group :func:`guardagent.cli.main`, unchanged.
"""

from __future__ import annotations

import sys


def main() -> None:
    """Entry point of the `guardagent` console script."""
    argv = sys.argv[1:]
    if argv[:1] == ["check"] and any(a == "--server" or a.startswith("--server=") for a in argv):
        from guardagent.service.hook import fast_check

        code = fast_check(argv)
        if code is not None:
            sys.exit(code)
    from guardagent.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
