"""The toolbox registry and the verdict and rule-check functions guard programs call.

Importing this package registers the built-in toolbox functions in `DEFAULT_TOOLBOX`: the
readers of :mod:`guardagent.readers`, the checks of :mod:`guardagent.tools.rules` and the
shipped policy models' predicate functions (:mod:`guardagent.policy.shipped`).
"""

from guardagent import readers  # noqa: F401, I001  (registers the readers, after the registry)
from guardagent.tools import rules  # noqa: F401  (registers the checks)
from guardagent.policy import shipped  # noqa: F401, I001  (registers the policy predicates)
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
