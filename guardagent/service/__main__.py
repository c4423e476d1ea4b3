"""`python -m guardagent.service --port N`: the same as `guardagent serve`."""

import sys

from guardagent.cli import main

if __name__ == "__main__":
    main(["serve", *sys.argv[1:]])
