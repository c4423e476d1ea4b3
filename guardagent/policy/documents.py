"""Moved to :mod:`guardagent.authoring.documents`; this import path keeps working (same module)."""

import sys

from guardagent.authoring import documents as _moved
from guardagent.authoring.documents import *  # noqa: F403

sys.modules[__name__] = _moved
