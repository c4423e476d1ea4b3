"""Moved to :mod:`guardagent.authoring.review`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import review as _moved
from guardagent.authoring.review import *  # noqa: F403

sys.modules[__name__] = _moved
