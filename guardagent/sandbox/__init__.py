"""The executor: RestrictedPython policy, the forked child process, and the pre-warmed zygote.

Modules, in the order a run passes through them: :mod:`.policy` compiles a program and
builds its globals, :mod:`.child` isolates a forked child and runs it there, :mod:`.zygote`
forks children cheaply for built-in toolboxes, and :mod:`.process` is the caller's side.

The caller's side loads when first named here: the zygote imports only the modules its
children run, so every fork copies the page tables of a smaller process (the caller's side
brings asyncio and ssl: the zygote maps 33 MB instead of 39 MB, and on this project's VM a fork
and exit cost about 0.05 ms of CPU per MB mapped).
"""

from typing import TYPE_CHECKING, Any

from guardagent.sandbox.child import SandboxLimits, check_program

if TYPE_CHECKING:
    from guardagent.sandbox.process import ExecutionResult, arun_program, run_program

__all__ = ["ExecutionResult", "SandboxLimits", "arun_program", "check_program", "run_program"]


def __getattr__(name: str) -> Any:
    if name in ("ExecutionResult", "arun_program", "run_program"):
        from guardagent.sandbox import process

        return getattr(process, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
