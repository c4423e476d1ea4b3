"""The toolbox registry and the verdict and rule-check functions guard programs call.

`DEFAULT_TOOLBOX` holds the built-in toolbox functions, from the one explicit list of
:mod:`guardagent.tools.builtins` (loaded on its first use, not at import): the readers of
:mod:`guardagent.readers`, the checks of :mod:`guardagent.tools.rules`, the shipped policy
models' predicate functions (:mod:`guardagent.policy.shipped`) and the text functions of
:mod:`guardagent.tools.text` (RE2 searches, `format_text`), which no shipped profile lists: a
profile opts in by naming them in its `toolbox`.
"""

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
