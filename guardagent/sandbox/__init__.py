"""The executor: RestrictedPython policy, the forked child process, and the pre-warmed zygote.

Modules, in the order a run passes through them: :mod:`.policy` compiles a program and
builds its globals, :mod:`.child` isolates a forked child and runs it there, :mod:`.zygote`
forks children cheaply for built-in toolboxes, and :mod:`.process` is the caller's side.
"""

from guardagent.sandbox.child import SandboxLimits, check_program
from guardagent.sandbox.process import ExecutionResult, arun_program, run_program

__all__ = ["ExecutionResult", "SandboxLimits", "arun_program", "check_program", "run_program"]
