"""Moved to :mod:`guardagent.authoring.extract`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import extract as _moved
from guardagent.authoring.extract import *  # noqa: F403

sys.modules[__name__] = _moved
