"""The RestrictedPython policy for guard programs: compile checks, guards and builtins.

Generated guard code is hostile (attacker-controlled agent output reaches the coder's
prompt), so everything here is an explicit allow-list: no module object is ever reachable,
attribute access refuses underscore names, frame/code walking attributes and
`str.format`, and a program may not rebind any name the host gave it (toolbox functions,
`allow`/`deny`, the two input strings). The process boundary in
:mod:`guardagent.sandbox.child` is the second, independent layer.
"""

from __future__ import annotations

import ast
import copy
import operator
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from types import CodeType
from typing import Any, NamedTuple

from RestrictedPython import Guards
from RestrictedPython.compile import compile_restricted_exec
from RestrictedPython.transformer import INSPECT_ATTRIBUTES

from guardagent.policy.recorder import PredicateError, PredicateRecorder
from guardagent.readers.evidence import describe, open_ledger
from guardagent.tools.registry import Toolbox
from guardagent.tools.verdict import VerdictError, VerdictRecorder

# RestrictedPython's guards are untyped; pin the signatures we rely on.
_safer_getattr: Callable[[object, str, Any], Any] = Guards.safer_getattr
_safer_getattr_raise: Callable[[object, str], Any] = Guards.safer_getattr_raise
_full_write_guard: Callable[[Any], Any] = Guards.full_write_guard
_iter_unpack_sequence: Callable[..., Any] = Guards.guarded_iter_unpack_sequence
_unpack_sequence: Callable[..., Any] = Guards.guarded_unpack_sequence

PROGRAM_FILENAME = "<guard>"
"""Filename compiled into guard code; tracebacks are matched on it to report line numbers."""

INPUT_NAMES = frozenset({"agent_input", "agent_output"})
TRUNCATED_MARK = "\n... [output truncated]"
_MAX_ERROR_CHARS = 2000
_MAX_UNREADABLE = 20  # ledger entries reported per run
# Exceptions of trusted functions passed on with their type; anything else becomes
# RuntimeError. Either way only the message crosses, never the original object.
_PASSED_EXCEPTIONS = (TypeError, ValueError, KeyError, IndexError, LookupError)

# Attributes refused on top of RestrictedPython's own list. `mro` hands out `object`;
# `format`/`format_map` are refused on every receiver because they walk attributes of
# their arguments by name (the "{0.__class__}" escape).
_DENIED_ATTRIBUTES = frozenset({"mro", "format", "format_map"}) | INSPECT_ATTRIBUTES

_SAFE_EXCEPTIONS: tuple[type[BaseException], ...] = (
    ArithmeticError,
    AssertionError,
    AttributeError,
    Exception,
    IndexError,
    KeyError,
    LookupError,
    NameError,
    NotImplementedError,
    OverflowError,
    RuntimeError,
    StopIteration,
    TypeError,
    UnicodeError,
    ValueError,
    ZeroDivisionError,
)

_SAFE_CALLABLES: tuple[Callable[..., Any], ...] = (
    abs,
    all,
    any,
    bin,
    bool,
    callable,
    chr,
    dict,
    divmod,
    enumerate,
    filter,
    float,
    frozenset,
    hash,
    hex,
    int,
    isinstance,
    iter,
    len,
    list,
    map,
    max,
    min,
    next,
    oct,
    ord,
    pow,
    range,
    repr,
    reversed,
    round,
    set,
    slice,
    sorted,
    str,
    sum,
    tuple,
    zip,
)

_INPLACE_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "+=": operator.iadd,
    "-=": operator.isub,
    "*=": operator.imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": operator.ipow,
    "<<=": operator.ilshift,
    ">>=": operator.irshift,
    "|=": operator.ior,
    "^=": operator.ixor,
    "&=": operator.iand,
    "@=": operator.imatmul,
}


class CompiledProgram(NamedTuple):
    """Outcome of :func:`compile_program`: code when runnable, else the errors found.

    Attributes:
        code: The restricted bytecode, or None when any error was found.
        compile_errors: Syntax and RestrictedPython errors.
        policy_errors: Verdict-integrity violations (see :func:`policy_errors`).

    """

    code: CodeType | None
    compile_errors: tuple[str, ...]
    policy_errors: tuple[str, ...]

    def rejection(self) -> str | None:
        """One `"<Kind>: a; b"` line for a rejected program (compile errors win), else None."""
        if self.compile_errors:
            return "CompileError: " + "; ".join(self.compile_errors)
        if self.policy_errors:
            return "PolicyError: " + "; ".join(self.policy_errors)
        return None

    def messages(self) -> list[str]:
        """Every error as `"<Kind>: text"`, compile errors first."""
        return [f"CompileError: {e}" for e in self.compile_errors] + [
            f"PolicyError: {e}" for e in self.policy_errors
        ]


# --------------------------------------------------------------------------- guards


def _refuse_attribute(obj: object, name: object) -> None:
    """Raise AttributeError for names a program must never reach, whatever the object."""
    if type(name) is not str:
        raise TypeError("attribute name must be a str")
    if name.startswith("_") or name in _DENIED_ATTRIBUTES:
        raise AttributeError(f"access to attribute {name!r} is not allowed")


def guarded_getattr(obj: object, name: str) -> Any:
    """`_getattr_` for `obj.name`: refuses dangerous names, raises on missing ones.

    Uses RestrictedPython's `safer_getattr_raise` underneath so a missing attribute is an
    error (the stock `safer_getattr` returns None, which can fail open).
    """
    _refuse_attribute(obj, name)
    return _safer_getattr_raise(obj, name)


def guarded_getattr_builtin(obj: object, name: str, *default: Any) -> Any:
    """The program's `getattr()`: same refusals as `_getattr_`, optional default."""
    _refuse_attribute(obj, name)
    if len(default) > 1:
        raise TypeError("getattr expected at most 3 arguments")
    if default:
        return _safer_getattr(obj, name, default[0])
    return _safer_getattr_raise(obj, name)


def guarded_hasattr(obj: object, name: str) -> bool:
    """The program's `hasattr()`: False for refused names instead of leaking them."""
    try:
        guarded_getattr(obj, name)
    except AttributeError:
        return False
    return True


def guarded_getitem(obj: Any, key: Any) -> Any:
    """`_getitem_`: plain subscription; nothing reachable here maps to host internals."""
    return obj[key]


def guarded_apply(func: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """`_apply_`: the transformer routes `f(*a, **kw)` calls through here.

    `func` is positional-only so a program's own `func=` keyword reaches its target.
    """
    return func(*args, **kwargs)


def guarded_inplacevar(op: str, target: Any, value: Any) -> Any:
    """`_inplacevar_`: `x += y` and friends, restricted to the known operators."""
    try:
        fn = _INPLACE_OPERATORS[op]
    except KeyError:
        raise TypeError(f"operator {op!r} is not allowed") from None
    return fn(target, value)


class OutputCollector:
    """One capped print buffer per run (the stock collector makes one per function).

    Printing past the cap keeps running but the text is dropped, so a print loop cannot
    exhaust the parent's memory; the time limits end the loop.
    """

    def __init__(self, max_chars: int) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._max = max_chars
        self.truncated = False

    def write(self, text: str) -> None:
        """Keep at most the first `max_chars` characters ever written."""
        room = self._max - self._size
        if room <= 0:
            self.truncated = self.truncated or bool(text)
            return
        if len(text) > room:
            self.truncated = True
            text = text[:room]
        self._parts.append(text)
        self._size += len(text)

    def flush(self) -> None:
        """`print(flush=True)` calls this; nothing is buffered elsewhere."""

    def text(self) -> str:
        """Everything kept so far."""
        return "".join(self._parts)

    def __call__(self) -> str:
        """The `printed` name in a program evaluates to this."""
        return self.text()

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        """`print(...)` as rewritten by the transformer; `file=` is refused."""
        if "file" in kwargs:
            raise TypeError("print(file=...) is not allowed")
        print(*objects, **kwargs, file=self)


def safe_builtins() -> dict[str, Any]:
    """The explicit builtins of a guard program: pure functions, plain types, exceptions."""
    table: dict[str, Any] = {f.__name__: f for f in _SAFE_CALLABLES}
    table.update({e.__name__: e for e in _SAFE_EXCEPTIONS})
    table.update(getattr=guarded_getattr_builtin, hasattr=guarded_hasattr)
    table.update({"True": True, "False": False, "None": None})
    return table


def program_globals(bindings: dict[str, Any], collector: OutputCollector) -> dict[str, Any]:
    """Fresh globals for one run: builtins, guards, then the host's `bindings`.

    Args:
        bindings: Toolbox wrappers, `allow`/`deny` and the input strings.
        collector: The run's single print buffer, returned by every `_print_(...)` call.

    """

    def print_factory(_getattr: object = None) -> OutputCollector:
        return collector

    return {
        "__builtins__": safe_builtins(),
        "__name__": "guard_program",
        "_getattr_": guarded_getattr,
        "_getitem_": guarded_getitem,
        "_getiter_": iter,
        "_iter_unpack_sequence_": _iter_unpack_sequence,
        "_unpack_sequence_": _unpack_sequence,
        "_write_": _full_write_guard,
        "_apply_": guarded_apply,
        "_inplacevar_": guarded_inplacevar,
        "_print_": print_factory,
        **bindings,
    }


# --------------------------------------------------------------------------- running


def copying_tool(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a trusted function so data crosses its boundary only as deep copies.

    The program can then neither mutate host data it was handed nor hand the trusted
    function an object it keeps mutating; trusted exceptions are re-raised without their
    chain so no host object rides along on them.
    """

    def call(*args: Any, **kwargs: Any) -> Any:
        args, kwargs = copy.deepcopy((args, kwargs))
        try:
            result = func(*args, **kwargs)
        except (MemoryError, RecursionError):
            raise  # still a limit, whoever hit it
        except Exception as exc:
            kind = type(exc) if type(exc) in _PASSED_EXCEPTIONS else RuntimeError
            raise kind(f"{name}(): {type(exc).__name__}: {exc}") from None
        return copy.deepcopy(result)

    call.__name__ = call.__qualname__ = name
    return call


def verdict_calls(recorder: VerdictRecorder, errors: list[str]) -> dict[str, Callable[..., Any]]:
    """`allow`/`deny` that also remember every VerdictError, caught by the program or not.

    A program that swallows a failed verdict call and tries again is treated as having
    failed: a forged or repeated verdict must never turn into a clean result.
    """
    return {
        name: _remembering(name, func, errors)
        for name, func in recorder.toolbox().functions().items()
    }


def assign_calls(recorder: PredicateRecorder, errors: list[str]) -> dict[str, Callable[..., Any]]:
    """`assign` that also remembers every PredicateError, caught by the program or not.

    As with the verdict calls, a failed assignment the program swallows still fails the
    run: a predicate must never be left at a value the program did not manage to set.
    """
    return {
        name: _remembering(name, func, errors)
        for name, func in recorder.toolbox().functions().items()
    }


def _remembering(name: str, func: Callable[..., Any], errors: list[str]) -> Callable[..., Any]:
    """Wrap one verdict call; a closure (not a default argument) so callers cannot swap it."""

    def call(*args: Any, **kwargs: Any) -> None:
        try:
            func(*args, **kwargs)
        except (VerdictError, PredicateError, TypeError) as exc:  # TypeError: arity, keywords
            errors.append(str(exc))
            raise type(exc)(str(exc)) from None

    call.__name__ = call.__qualname__ = name
    return call


def _program_line(exc: BaseException) -> str:
    """` (line N)` of the deepest traceback frame inside the program, or ''."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == PROGRAM_FILENAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f" (line {line})" if line else ""


def _describe(exc: BaseException) -> str:
    """`"<Kind>: message"` for an exception that ended the program."""
    if isinstance(exc, MemoryError):
        return "LimitExceeded: memory limit exceeded (MemoryError)"
    if isinstance(exc, RecursionError):
        return "LimitExceeded: maximum recursion depth exceeded" + _program_line(exc)
    try:
        text = str(exc)[:_MAX_ERROR_CHARS]
    except Exception:
        text = "<unprintable>"
    kind = "VerdictError" if isinstance(exc, VerdictError) else "RuntimeError"
    return f"{kind}: {type(exc).__name__}: {text}{_program_line(exc)}"


@dataclass
class PreparedProgram:
    """A compiled program with its fresh globals, ready to execute exactly once."""

    code: CodeType | None
    scope: dict[str, Any]
    recorder: VerdictRecorder
    verdict_errors: list[str]
    collector: OutputCollector
    predicates: PredicateRecorder = field(default_factory=PredicateRecorder)

    def execute(self) -> dict[str, Any]:
        """Run it here; `{"v": verdict, "e": "<Kind>: ...", "o": stdout, "u": [...], "p": {...}}`.

        The verdict and the predicates are reported only for a clean run: after an error,
        after any failed verdict or assign call (even one the program caught), or when a
        reader recorded evidence it could not read (`"u"`, even if the program caught the
        exception), they are dropped. A program under a policy model may assign predicates
        instead of giving a verdict; one that does neither has not decided anything.
        """
        if self.code is None:
            return {"v": None, "e": "SandboxError: no compiled code to run", "o": ""}
        error: str | None = None
        ledger = open_ledger()
        try:
            exec(self.code, self.scope)
        except BaseException as exc:
            error = _describe(exc)
        self.scope.clear()  # frees a memory bomb's data before the result is built
        if ledger:  # a reader could not read the event: whatever the program did, deny
            error = f"Unreadable: {describe(ledger)}"[:_MAX_ERROR_CHARS]
        elif self.verdict_errors:
            error = f"VerdictError: {self.verdict_errors[0][:_MAX_ERROR_CHARS]}"
        elif error is None and self.recorder.verdict is None and not self.predicates.assignments:
            error = (
                "NoVerdict: the program finished without calling allow() or deny() "
                "(or assign() under a policy model)"
            )
        stdout = self.collector.text() + (TRUNCATED_MARK if self.collector.truncated else "")
        verdict = self.recorder.verdict if error is None else None
        predicates = self.predicates.to_json() if error is None else {}
        return {
            "v": verdict,
            "e": error,
            "o": stdout,
            "u": ledger[:_MAX_UNREADABLE],
            "p": predicates,
        }


def prepare_program(
    code: CodeType | None, toolbox: Toolbox, agent_input: str, agent_output: str, max_output: int
) -> PreparedProgram:
    """Fresh recorders, print buffer, copying wrappers and globals for one run."""
    recorder = VerdictRecorder()
    predicates = PredicateRecorder()
    verdict_errors: list[str] = []
    collector = OutputCollector(max_output)
    bindings: dict[str, Any] = {n: copying_tool(n, f) for n, f in toolbox.functions().items()}
    bindings.update(verdict_calls(recorder, verdict_errors))
    bindings.update(assign_calls(predicates, verdict_errors))
    bindings.update(agent_input=agent_input, agent_output=agent_output)
    scope = program_globals(bindings, collector)
    return PreparedProgram(code, scope, recorder, verdict_errors, collector, predicates)


# --------------------------------------------------------------------------- policy


def _bound_names(node: ast.AST) -> Iterator[tuple[str, str]]:
    """(name, how) for every name `node` binds, deletes or declares."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
        yield node.id, "delete" if isinstance(node.ctx, ast.Del) else "assign to"
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name, "define"
    elif isinstance(node, ast.arg):
        yield node.arg, "use as a parameter"
    elif isinstance(node, ast.alias):
        yield node.asname or node.name.partition(".")[0], "import as"
    elif isinstance(node, ast.Global | ast.Nonlocal):
        yield from ((n, "declare global") for n in node.names)
    elif isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name, "bind in except"
    elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
        yield node.name, "capture in match"
    elif isinstance(node, ast.MatchMapping) and node.rest:
        yield node.rest, "capture in match"
    elif (
        isinstance(node, ast.Attribute | ast.Subscript)
        and isinstance(node.ctx, ast.Store | ast.Del)
        and isinstance(node.value, ast.Name)
    ):
        yield node.value.id, "modify"


def policy_errors(tree: ast.AST, protected: Iterable[str]) -> list[str]:
    """Verdict-integrity checks on the untransformed AST.

    Rebinding a protected name would let a program swap `allow`/`deny` or a toolbox
    function for its own code, so any binding of one is refused before the program runs;
    imports and classes have no use in guard code and are refused outright.
    """
    protected = frozenset(protected)
    errors: list[str] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        if isinstance(node, ast.Import | ast.ImportFrom):
            errors.append(f"Line {line}: imports are not allowed")
        elif isinstance(node, ast.ClassDef):
            errors.append(f"Line {line}: class definitions are not allowed")
        for name, how in _bound_names(node):
            if name in protected:
                errors.append(f"Line {line}: cannot {how} protected name {name!r}")
    return errors


def _parse(source: str) -> ast.Module | str:
    """The AST, or a one-line reason; parser bombs surface as MemoryError/RecursionError."""
    try:
        return ast.parse(source, PROGRAM_FILENAME, "exec")
    except SyntaxError as exc:
        where = f"Line {exc.lineno}: " if exc.lineno else ""
        return f"{where}{type(exc).__name__}: {exc.msg}"
    except (MemoryError, RecursionError, ValueError) as exc:
        return f"source too complex or invalid to parse ({type(exc).__name__})"


AST_LOCK = threading.RLock()
"""Held around every parse and compile of program source in the guard process: CPython 3.11
converts ASTs with interpreter-wide state, and two threads doing it at once can fail with
"AST constructor recursion depth mismatch" (python/cpython#106905). Reentrant: verification
holds it around the readers it runs in-process (they parse the agent's code), and a program
run there compiles under it too."""


@lru_cache(maxsize=128)
def compile_program(source: str, protected: frozenset[str]) -> CompiledProgram:
    """Parse, check the policy and compile restricted; cached so repeated runs skip it.

    The policy walk runs first, on the pristine tree, because the RestrictedPython
    transformer rewrites the tree in place.
    """
    with AST_LOCK:
        return _compile(source, protected)


def _compile(source: str, protected: frozenset[str]) -> CompiledProgram:
    tree = _parse(source)
    if isinstance(tree, str):
        return CompiledProgram(None, (tree,), ())
    policy = tuple(policy_errors(tree, protected))
    try:
        result = compile_restricted_exec(tree, PROGRAM_FILENAME)
    except (MemoryError, RecursionError, SyntaxError, ValueError) as exc:
        return CompiledProgram(None, (f"cannot compile: {type(exc).__name__}: {exc}",), policy)
    if result.errors or policy:
        return CompiledProgram(None, tuple(result.errors), policy)
    return CompiledProgram(result.code, (), ())
