"""Moved to :mod:`guardagent.authoring.answers`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import answers as _moved
from guardagent.authoring.answers import *  # noqa: F403

sys.modules[__name__] = _moved
