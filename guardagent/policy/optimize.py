"""Moved to :mod:`guardagent.authoring.optimize`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import optimize as _moved
from guardagent.authoring.optimize import *  # noqa: F403

sys.modules[__name__] = _moved
