"""Moved to :mod:`guardagent.authoring.derive`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import derive as _moved
from guardagent.authoring.derive import *  # noqa: F403

sys.modules[__name__] = _moved
