"""Moved to :mod:`guardagent.authoring.prompts`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import prompts as _moved
from guardagent.authoring.prompts import *  # noqa: F403

sys.modules[__name__] = _moved
