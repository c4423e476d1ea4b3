"""Former home of the executor; it lives in :mod:`guardagent.sandbox` now."""

from guardagent.sandbox import (
    ExecutionResult,
    SandboxLimits,
    arun_program,
    check_program,
    run_program,
)

__all__ = ["ExecutionResult", "SandboxLimits", "arun_program", "check_program", "run_program"]
