"""The rule-logic grammar (lark, LALR): `NOT AND OR IMPLIES IFF ( ) TRUE FALSE`.

Precedence, tightest first: `NOT`, `AND`, `OR`, `IMPLIES` (right-associative: `a IMPLIES b
IMPLIES c` is `a IMPLIES (b IMPLIES c)`), `IFF` (left-associative). Keywords are upper case,
as in ShieldAgent's rules; a lower-case `and` is a predicate name and so an error the parser
reports with its column. Errors carry the line and column inside the logic string; the model
loader adds the file position of the string.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from guardagent.policy.formula import And, Const, Formula, Iff, Implies, Not, Or, Var

GRAMMAR = r"""
?start: iff

?iff: implies
    | iff "IFF" implies        -> iff

?implies: disj
    | disj "IMPLIES" implies   -> implies

?disj: conj
    | conj ("OR" conj)+        -> disj

?conj: neg
    | neg ("AND" neg)+         -> conj

?neg: atom
    | "NOT" neg                -> neg

?atom: NAME                    -> var
    | "TRUE"                   -> true
    | "FALSE"                  -> false
    | "(" iff ")"

// A name is never a keyword: `AND` at the start of a rule is an error, not a predicate.
NAME: /(?!(?:NOT|AND|OR|IMPLIES|IFF|TRUE|FALSE)(?![A-Za-z0-9_]))[A-Za-z_][A-Za-z0-9_]*/

%import common.WS
%ignore WS
"""

MAX_DEPTH = 100
"""Operators nested deeper than this are refused (the transformer and the solver recurse)."""

KEYWORDS = frozenset({"NOT", "AND", "OR", "IMPLIES", "IFF", "TRUE", "FALSE"})

_TOKEN_WORDS = {
    "NAME": "a predicate name",
    "LPAR": "'('",
    "RPAR": "')'",
    "NOT": "NOT",
    "AND": "AND",
    "OR": "OR",
    "IMPLIES": "IMPLIES",
    "IFF": "IFF",
    "TRUE": "TRUE",
    "FALSE": "FALSE",
    "$END": "the end of the rule",
}


class LogicSyntaxError(ValueError):
    """A rule's logic does not parse; `line`/`column` are 1-based inside the logic string."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"{line}:{column}: {message}")
        self.message = message
        self.line = line
        self.column = column


class _ToFormula(Transformer[Token, Formula]):
    """Lark tree -> our frozen dataclasses."""

    def var(self, items: list[Token]) -> Formula:
        return Var(str(items[0]), items[0].column or 0)

    def true(self, _: list[Token]) -> Formula:
        return Const(True)

    def false(self, _: list[Token]) -> Formula:
        return Const(False)

    def neg(self, items: list[Formula]) -> Formula:
        return Not(items[0])

    def conj(self, items: list[Formula]) -> Formula:
        return And(tuple(items))

    def disj(self, items: list[Formula]) -> Formula:
        return Or(tuple(items))

    def implies(self, items: list[Formula]) -> Formula:
        return Implies(items[0], items[1])

    def iff(self, items: list[Formula]) -> Formula:
        return Iff(items[0], items[1])


@lru_cache(maxsize=1)
def _parser() -> Lark:
    return Lark(GRAMMAR, parser="lalr", lexer="contextual", propagate_positions=False)


def _describe_expected(expected: set[str]) -> str:
    words = sorted({_TOKEN_WORDS.get(e, e) for e in expected})
    return ", ".join(words)


def _expected(exc: UnexpectedInput) -> set[str]:
    """What the parser would accept at an error.

    `accepts` follows pending reductions, so it is the honest set (an LALR state's
    `expected` alone can miss `AND`/`OR` after a name).
    """
    accepts = getattr(exc, "accepts", None)
    return set(accepts or getattr(exc, "expected", None) or ())


def _accepts_at_end(text: str, exc: UnexpectedInput) -> set[str]:
    """Tokens that could follow the whole text.

    Replayed on an interactive parser, which follows every pending reduction (an error state
    at the end of the input only knows part of them).
    """
    try:
        interactive = _parser().parse_interactive(text)
        for _ in interactive.iter_parse():
            pass
        accepts: Callable[[], set[str]] = interactive.accepts  # untyped in lark
        return set(accepts()) - {"$END"}
    except UnexpectedInput:
        return _expected(exc)


def _error(text: str, exc: UnexpectedInput) -> LogicSyntaxError:
    line, column = exc.line, exc.column
    if isinstance(exc, UnexpectedEOF) or (
        isinstance(exc, UnexpectedToken) and exc.token.type == "$END"
    ):
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
        return LogicSyntaxError(
            f"the rule ends early; expected {_describe_expected(_accepts_at_end(text, exc))}",
            line,
            column,
        )
    if isinstance(exc, UnexpectedToken):
        value = str(exc.token)
        hint = ""
        if exc.token.type == "NAME" and value.upper() in KEYWORDS:
            hint = f" (keywords are upper case: {value.upper()})"
        return LogicSyntaxError(
            f"unexpected {value!r}{hint}; expected {_describe_expected(_expected(exc))}",
            line,
            column,
        )
    if isinstance(exc, UnexpectedCharacters):
        char = text.splitlines()[line - 1][column - 1] if line >= 1 else "?"
        return LogicSyntaxError(f"unexpected character {char!r}", line, column)
    return LogicSyntaxError(str(exc).splitlines()[0], max(line, 1), max(column, 1))


def parse_logic(text: str) -> Formula:
    """Parse one rule's logic.

    Args:
        text: e.g. ``"data_is_private AND NOT user_consent IMPLIES NOT publish_data"``.

    Returns:
        The formula; predicate references keep their column for later error messages.

    Raises:
        LogicSyntaxError: with the 1-based line and column inside `text`.
    """
    if type(text) is not str:
        raise LogicSyntaxError("the logic must be a string", 1, 1)
    if not text.strip():
        raise LogicSyntaxError("the logic is empty", 1, 1)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as exc:
        raise _error(text, exc) from None
    _check_depth(tree)
    return _ToFormula().transform(tree)


def _check_depth(tree: Tree[Token]) -> None:
    """Refuse a formula nested deeper than :data:`MAX_DEPTH`, walking it without recursion."""
    stack: list[tuple[Tree[Token] | Token, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise LogicSyntaxError(f"the logic nests operators more than {MAX_DEPTH} deep", 1, 1)
        if isinstance(node, Tree):
            stack.extend((child, depth + 1) for child in node.children)
