"""Trusted functions guard programs may call, and the sandbox that runs the programs.

Importing this package registers the built-in toolbox functions in `DEFAULT_TOOLBOX`.
"""

from guardagent.tools import ehr, toolcalls, web  # noqa: F401  (registers the built-ins)
from guardagent.tools.registry import DEFAULT_TOOLBOX, Toolbox, ToolSpec, guard_tool
from guardagent.tools.verdict import VERDICT_NAMES, Verdict, VerdictError, VerdictRecorder

__all__ = [
    "DEFAULT_TOOLBOX",
    "VERDICT_NAMES",
    "ToolSpec",
    "Toolbox",
    "Verdict",
    "VerdictError",
    "VerdictRecorder",
    "guard_tool",
]
