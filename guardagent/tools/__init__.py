"""The toolbox registry and the verdict and rule-check functions guard programs call.

Importing this package registers the built-in toolbox functions in `DEFAULT_TOOLBOX`: the
readers of :mod:`guardagent.readers`, the checks of :mod:`guardagent.tools.rules`, the
shipped policy models' predicate functions (:mod:`guardagent.policy.shipped`) and the text
functions of :mod:`guardagent.tools.text` (RE2 searches, `format_text`), which no shipped
profile lists: a profile opts in by naming them in its `toolbox`.
"""

from guardagent import readers  # noqa: F401, I001  (registers the readers, after the registry)
from guardagent.tools import rules  # noqa: F401  (registers the checks)
from guardagent.tools import text  # noqa: F401  (registers re_search, ..., format_text)
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
