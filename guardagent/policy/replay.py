"""Moved to :mod:`guardagent.authoring.replay`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import replay as _moved
from guardagent.authoring.replay import *  # noqa: F403

sys.modules[__name__] = _moved
