"""Moved to :mod:`guardagent.authoring.cli`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import cli as _moved
from guardagent.authoring.cli import *  # noqa: F403

sys.modules[__name__] = _moved
