r"""Reader for EHRAgent on eICU (the paper's EICU-AC): who asks, and which columns the code reads.

Trust boundary: facts about the user come only from the agent input (`Identity:`); what data
the answer came from comes only from the code in the agent output, which is attacker-influenced
text and is parsed, never run.

Every presentation of EHRAgent's output is read, in two steps. First the output is normalised
into its code blocks (:func:`code_blocks`): the raw run log's JSON `{"cell": "..."}` blocks
(however many retries), `Solution:` sections, the paper's `Generated code:` ... `Answer:` layout
(Figure 9), fenced markdown blocks (```` ```python ````, ```` ```sql ````, bare fences), and
code or SQL standing outside any block. Then each block is parsed: Python with `ast`
(:mod:`.ehr_python`), SQL with `sqlglot` (:mod:`.ehr_sql`). An attacker can add a code block
to the output but cannot remove the one that ran, so the reads of **every** block count, cells
of one run sharing their variables as in the agent's kernel.

Fails closed (the event is denied, naming what could not be read): an output with no code at
all, whatever its answer (`no_code`: "nothing found" never means "nothing read"); an input
with no `Identity:` line (`no_identity`); a code block that is not valid Python or SQL, a
`"cell"` block that is not valid JSON (`unparsable_code`); a line that calls one of EHRAgent's
tools outside any block but does not parse; plus everything :mod:`.ehr_python` and
:mod:`.ehr_sql` fail closed on (a column or table chosen at run time or not in the schema,
write statements, dynamic code, ...). Outputs hold at most `MAX_CELLS` cells and
`MAX_BLOCKS` blocks (`too_complex` beyond).
"""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from dataclasses import dataclass
from typing import Literal

from guardagent.readers.ehr_python import Interpreter
from guardagent.readers.ehr_sql import sql_reads
from guardagent.readers.ehr_text import lift_raw_sql, parses
from guardagent.readers.eicu_schema import EICU_PRIMARY_KEYS, EICU_SCHEMA
from guardagent.readers.evidence import unreadable

__all__ = [
    "EICU_PRIMARY_KEYS",
    "EICU_SCHEMA",
    "CodeBlock",
    "code_blocks",
    "ehr_accessed_columns",
    "ehr_code",
    "parse_identity",
    "parse_question",
]

MAX_CELLS = 200
MAX_BLOCKS = 400
Language = Literal["python", "sql", "auto"]

_SECTION_HEADERS = ("Solution:", "Generated code:", "Generated Code:", "Code:")
_OTHER_HEADERS = (
    "Answer:",
    "Knowledge:",
    "Question:",
    "Observation:",
    "Error:",
    "Potential Reasons:",
    "TERMINATE",
)
_ERROR_REPORT = ("Error:", "Potential Reasons:", "Please make modifications")
_TOOL_NAMES = frozenset({"LoadDB", "FilterDB", "GetValue", "SQLInterpreter"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # words of prose lines, to spot a tool call
_MAX_CONTINUATION = 40  # lines a bare statement may span
_MAX_PREFIX_TRIES = 8  # parses spent finding where a section's code ends and prose begins
_CODE_NODES = (
    ast.Assign,
    ast.AugAssign,
    ast.Import,
    ast.ImportFrom,
    ast.For,
    ast.While,
    ast.If,
    ast.With,
    ast.FunctionDef,
    ast.Return,
    ast.Try,
    ast.Delete,
    ast.Call,
    ast.ClassDef,
    ast.Lambda,
)


@dataclass(frozen=True)
class CodeBlock:
    """One piece of code found in an EHRAgent output.

    Attributes:
        kind: Where it was found: `cell`, `section` (`Solution:` / `Generated code:`),
            `fence` (markdown) or `bare` (outside any block).
        language: `python`, `sql`, or `auto` (Python, else SQL when it reads as SQL).
        text: The code, decoded.
        line: 1-based line of the output where it starts (for messages).
    """

    kind: str
    language: Language
    text: str
    line: int

    @property
    def where(self) -> str:
        """How a message names this block."""
        return f"the {self.kind} block at output line {self.line}"


# --------------------------------------------------------------------------- agent input


def parse_identity(agent_input: str) -> str:
    r"""The user's role, read from the `Identity:` line of the agent input.

    Only the agent input is trusted for facts about the user; never call this on the agent
    output, which the target agent (and anyone steering it) writes. An input without an
    `Identity:` line cannot be judged: the event is denied as unreadable (`no_identity`).

    Args:
        agent_input: The event's input, e.g. "Identity: nursing\nQuestion: ...".

    Returns:
        The role lowercased with runs of whitespace collapsed to one space (for example
        "general administration").

    """
    for line in agent_input.splitlines():
        head, sep, value = line.partition(":")
        if sep and head.strip().lower() == "identity":
            role = " ".join(value.split()).lower()
            if role:
                return role
    unreadable("no_identity", "the agent input has no 'Identity:' line naming the user's role")


def parse_question(agent_input: str) -> str:
    r"""The user's question: the text after `Question:` in the agent input.

    Args:
        agent_input: The event's input, e.g. "Identity: nursing\nQuestion: ...".

    Returns:
        The question with surrounding whitespace stripped, or "" when there is none.

    """
    lines = agent_input.splitlines()
    for i, line in enumerate(lines):
        head, sep, value = line.partition(":")
        if sep and head.strip().lower() == "question":
            return "\n".join([value, *lines[i + 1 :]]).strip()
    return ""


# --------------------------------------------------------------------------- normalising


def _json_string(text: str, start: int) -> tuple[str, int] | None:
    r"""Decode the JSON string literal opening at `text[start]`; (value, end) or None.

    Tolerates the escapes EHRAgent logs hold but JSON forbids (`\'`, a backslash before a
    newline), so the real logs read as the agent meant them.
    """
    simple = {
        "n": "\n",
        "t": "\t",
        "r": "\r",
        "b": "\b",
        "f": "\f",
        "/": "/",
        '"': '"',
        "\\": "\\",
        "'": "'",
        "\n": "",
    }
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
        elif nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt:
            out.append(nxt)  # an escape JSON does not know: the character itself
            i += 2
        else:
            return None
    return None


def _cells(output: str) -> list[tuple[int, int, str]]:
    """(start, end, code) of every `{"cell": "..."}` object, wherever it stands.

    Every `"cell"` key of a decoded object counts, nested objects and repeated keys included:
    a forged `{"cell": "...", "a": <the real cell>}` or a second `"cell"` key added to the
    real object must not hide the code that ran.
    """
    found: list[tuple[int, int, str]] = []
    values: list[object] = []

    def every_cell(pairs: list[tuple[str, object]]) -> dict[str, object]:
        values.extend(v for k, v in pairs if k == "cell")
        return dict(pairs)

    decoder = json.JSONDecoder(strict=False, object_pairs_hook=every_cell)
    pos = 0
    while (key := output.find('"cell"', pos)) >= 0:
        pos = key + 6
        brace = key - 1
        while brace >= 0 and output[brace] in " \t\r\n":
            brace -= 1
        if brace < 0 or output[brace] != "{":
            continue  # prose mentioning "cell"; code in prose is caught as a bare line
        values.clear()
        try:
            _, end = decoder.raw_decode(output, brace)
            codes: list[object] = list(values)
        except (ValueError, RecursionError):
            lenient, end = _lenient_cell(output, pos)
            codes = [lenient]
        for code in codes:
            if not isinstance(code, str):
                line = output.count("\n", 0, brace) + 1
                unreadable(
                    "unparsable_code", f"the code cell at output line {line} is not valid JSON"
                )
            if len(found) >= MAX_CELLS:
                unreadable("too_complex", f"the output holds more than {MAX_CELLS} code cells")
            found.append((brace, end, code))
        pos = end
    return found


def _lenient_cell(output: str, after_key: int) -> tuple[str | None, int]:
    """`"cell": "<string>" }` read with the string's lax escapes; (None, pos) when not that."""
    i = after_key
    while i < len(output) and output[i] in " \t\r\n":
        i += 1
    if output[i : i + 1] != ":":
        return None, after_key
    i += 1
    while i < len(output) and output[i] in " \t\r\n":
        i += 1
    if output[i : i + 1] != '"':
        return None, after_key
    decoded = _json_string(output, i)
    if decoded is None:
        return None, after_key
    code, i = decoded
    while i < len(output) and output[i] in " \t\r\n":
        i += 1
    return (code, i + 1) if output[i : i + 1] == "}" else (None, after_key)


def _is_rule(line: str) -> bool:
    """A separator line of dashes (EHRAgent prints one between the parts of its log)."""
    text = line.strip()
    return len(text) >= 3 and set(text) == {"-"}


def _header(line: str, headers: tuple[str, ...]) -> str | None:
    text = line.strip()
    return next((h for h in headers if text.startswith(h)), None)


def _fence(line: str) -> str | None:
    """The info string of a markdown fence line (`` ```python ``), or None."""
    text = (
        line[len(line) - len(line.lstrip(" ")) :] if len(line) - len(line.lstrip(" ")) <= 3 else ""
    )
    return text[3:].strip().lower() if text.startswith("```") else None


def _is_error_report(text: str) -> bool:
    """EHRAgent's own report of a failed cell (`TypeError: ... in the code line "..."`).

    It quotes code from a cell in prose; the cell itself is read, the quote never ran.
    """
    head, sep, _ = text.partition(":")
    return text.startswith(_ERROR_REPORT) or (
        bool(sep) and head.isidentifier() and head.endswith(("Error", "Exception"))
    )


def _looks_like_sql(text: str) -> bool:
    words = _WORD.findall(text[:200].lower())
    return bool(words) and words[0] in ("select", "with") and "from" in _WORD.findall(text.lower())


def _calls_tool(line: str) -> bool:
    """Whether a line calls one of EHRAgent's tools (`LoadDB(`, `SQLInterpreter[`, ...)."""
    for word in _WORD.finditer(line):
        if word.group() in _TOOL_NAMES:
            rest = line[word.end() :].lstrip()
            if rest[:1] in ("(", "["):
                return True
    return False


_CODE_KEYWORDS = frozenset(
    {
        "for",
        "if",
        "elif",
        "else",
        "while",
        "with",
        "def",
        "return",
        "import",
        "from",
        "try",
        "except",
        "finally",
        "class",
        "lambda",
        "assert",
        "del",
        "raise",
        "print",
    }
)
_CODE_FOLLOWERS = frozenset({"=", "(", "[", ".", ",", ":", "+=", "-=", "*=", "/=", "|="})


def _starts_like_code(text: str) -> bool:
    """Whether a line opens the way a Python statement does (`name =`, `name(`, `for ...`).

    Used on lines that mention a tool but do not parse: `x = FilterDB(db, 'a'` is broken
    code (unreadable), `(2) LoadDB(DBNAME) loads the table` is prose about the tool.
    """
    tokens: list[tokenize.TokenInfo] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER, tokenize.STRING):
                tokens.append(token)
            if len(tokens) == 2:
                break
    except (tokenize.TokenError, SyntaxError):
        pass  # an unclosed bracket later in the line: the first tokens are what we need
    if not tokens or tokens[0].type != tokenize.NAME:
        return False
    if tokens[0].string in _CODE_KEYWORDS:
        return True
    return len(tokens) == 2 and tokens[1].string in _CODE_FOLLOWERS


def _is_statement(text: str) -> bool:
    """Whether `text` parses as Python that does something (not a bare name, number or tuple)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(n, _CODE_NODES) for n in ast.walk(tree)) or any(
        isinstance(n, ast.AnnAssign) and n.value is not None for n in tree.body
    )


def _parses(text: str) -> bool:
    """Valid Python, once any `SQLInterpreter[raw SQL]` is lifted into a string."""
    return parses(lift_raw_sql(text))


def _never_ran(block: CodeBlock) -> bool:
    """Whether Python refuses the block as invalid (a SyntaxError: none of it ran).

    A block this interpreter's parser cannot finish for depth or memory is not invalid:
    another Python (a higher recursion limit, a newer parser) may run it, so it is
    unreadable (`too_complex`), never skipped.
    """
    try:
        ast.parse(lift_raw_sql(block.text))
    except (SyntaxError, ValueError):
        return True
    except (RecursionError, MemoryError):
        unreadable("too_complex", f"{block.where} is too deeply nested for this parser to read")
    return False


def _error_line(text: str) -> int | None:
    """The line where Python stops parsing `text` (None: it parses; 0: unknown)."""
    try:
        ast.parse(lift_raw_sql(text))
    except SyntaxError as exc:
        return exc.lineno or 0
    except (ValueError, RecursionError, MemoryError):
        return 0
    return None


class _Lines:
    """The output's lines outside cells, walked once: sections, fences and bare code."""

    def __init__(self, text: str, cell_lines: set[int]) -> None:
        self.lines = text.split("\n")
        self.cell_lines = cell_lines  # 0-based lines a cell stood on (now blank)
        self.blocks: list[CodeBlock] = []

    def scan(self) -> None:
        i = 0
        while i < len(self.lines):
            line = self.lines[i]
            info = _fence(line)
            if info is not None:
                i = self.fence(i, info)
            elif _header(line, _SECTION_HEADERS):
                i = self.section(i)
            else:
                i = self.bare(i)

    def add(self, kind: str, language: Language, text: str, line: int) -> None:
        if text.strip():
            if len(self.blocks) >= MAX_BLOCKS:
                unreadable("too_complex", f"the output holds more than {MAX_BLOCKS} code blocks")
            self.blocks.append(CodeBlock(kind, language, text.strip("\n"), line + 1))

    def fence(self, start: int, info: str) -> int:
        """A markdown fence; an unclosed one runs to the end (as in CommonMark)."""
        end = start + 1
        while end < len(self.lines) and not (
            self.lines[end].strip().startswith("```") and set(self.lines[end].strip()) == {"`"}
        ):
            end += 1
        language: Language = (
            "sql"
            if info.startswith("sql")
            else ("python" if info.startswith(("python", "py")) else "auto")
        )
        self.add("fence", language, "\n".join(self.lines[start + 1 : end]), start + 1)
        return end + 1

    def section(self, start: int) -> int:
        """`Solution:` / `Generated code:`: code up to a separator, header or fence."""
        header = _header(self.lines[start], _SECTION_HEADERS) or ""
        first = self.lines[start].strip()[len(header) :]
        body = [first] if first.strip() else []
        i = start + 1
        rules = 0
        while (
            i < len(self.lines)
            and not body
            and i not in self.cell_lines
            and (not self.lines[i].strip() or (_is_rule(self.lines[i]) and rules == 0))
        ):
            rules += _is_rule(self.lines[i])
            i += 1
        begin = i
        while i < len(self.lines):
            line = self.lines[i]
            if (
                i in self.cell_lines
                or _is_rule(line)
                or _fence(line) is not None
                or _header(line, _SECTION_HEADERS + _OTHER_HEADERS)
            ):
                break
            body.append(line)
            i += 1
        text = "\n".join(body)
        if not text.strip() or _parses(text) or _looks_like_sql(text):
            self.add("section", "auto", text, begin)
            return i
        # Code, then prose without a header: keep the longest prefix that parses, cutting
        # where the parser stops (a bounded number of tries, so a hostile section costs
        # linear time); the rest is read line by line (a tool call in it is still caught).
        cut = len(body) - 1
        for _ in range(_MAX_PREFIX_TRIES):
            if cut < 1:
                break
            prefix = "\n".join(body[:cut])
            stop = _error_line(prefix)
            if stop is None and _is_statement(prefix):
                self.add("section", "python", prefix, begin)
                return begin + cut - (1 if first.strip() else 0)
            cut = min(cut - 1, stop - 1) if stop else cut - 1
        self.add("section", "auto", text, begin)  # not valid: unreadable when parsed
        return i

    def bare(self, i: int) -> int:
        """A line outside any block: code when it calls a tool, is a statement, or is SQL."""
        line = self.lines[i]
        text = line.strip().lstrip("-*> ").strip()
        if not text or _is_error_report(text):
            return i + 1
        if _looks_like_sql(text):
            end = i + 1
            while (
                end < len(self.lines)
                and self.lines[end].strip()
                and not text.rstrip().endswith(";")
                and end - i < _MAX_CONTINUATION
            ):
                end += 1
            self.add("bare", "sql", "\n".join([text, *self.lines[i + 1 : end]]), i)
            return end
        tool = _calls_tool(text) and _starts_like_code(text)
        if not tool and not _is_statement(text):
            return i + 1  # prose, or prose that mentions a tool: `(2) LoadDB(DBNAME) loads ...`
        for end in range(i + 1, min(len(self.lines), i + _MAX_CONTINUATION) + 1):
            chunk = "\n".join([text, *self.lines[i + 1 : end]])
            if _parses(chunk):
                chunk, end = self.indented_tail(chunk, end)
                self.add("bare", "python", chunk, i)
                return end
        what = "calls an EHRAgent tool" if tool else "reads as code"
        unreadable("unparsable_code", f"output line {i + 1} {what} but is not valid Python")

    def indented_tail(self, chunk: str, end: int) -> tuple[str, int]:
        """`chunk` extended by the indented lines after it that keep it valid Python.

        The whole indented run is tried at once; when it does not parse, lines are added one
        at a time up to `_MAX_CONTINUATION` (the rest is read line by line), so a long run
        costs linear time.
        """
        stop = end
        while stop < len(self.lines) and self.lines[stop][:1] in (" ", "\t"):
            stop += 1
        whole = "\n".join([chunk, *self.lines[end:stop]])
        if stop > end and _parses(whole):
            return whole, stop
        while end < min(stop, end + _MAX_CONTINUATION) and _parses(
            "\n".join([chunk, self.lines[end]])
        ):
            chunk = "\n".join([chunk, self.lines[end]])
            end += 1
        return chunk, end


def code_blocks(agent_output: str) -> list[CodeBlock]:
    """Every code block of an EHRAgent output, in the order they appear.

    Args:
        agent_output: The output in any of EHRAgent's presentations (see the module doc).

    Returns:
        The blocks, cells and the others interleaved by position. Empty when the output holds
        no code at all.

    """
    cells = _cells(agent_output)
    rest = list(agent_output)
    cell_lines: set[int] = set()
    for start, end, _ in cells:  # blank the cells out, keeping line numbers
        rest[start:end] = ["\n" if ch == "\n" else " " for ch in agent_output[start:end]]
        first = agent_output.count("\n", 0, start)
        cell_lines.update(range(first, first + agent_output.count("\n", start, end) + 1))
    lines = _Lines("".join(rest), cell_lines)
    lines.scan()
    blocks = [
        CodeBlock("cell", "python", code, agent_output.count("\n", 0, start) + 1)
        for start, _, code in cells
    ]
    return sorted([*blocks, *lines.blocks], key=lambda b: b.line)


def ehr_code(agent_output: str) -> str:
    """All the code of an EHRAgent output, every block in order (retries included).

    An attacker can add code to the output but cannot remove the code that ran, so every
    block counts. Blocks are separated by a comment line naming where each was found.

    Args:
        agent_output: The EHRAgent output: a raw run log with JSON `{"cell": ...}` blocks,
            `Solution:` sections, the paper's `Generated code:` / `Answer:` layout, fenced
            blocks, or a mixture.

    Returns:
        The code as text; "" when the output holds no code.

    """
    blocks = code_blocks(agent_output)
    return "\n".join(f"# --- {b.where} ({b.language})\n{b.text}" for b in blocks)


def ehr_accessed_columns(agent_output: str) -> dict[str, list[str]]:
    """Tables and columns EHRAgent's code reads, from every code block of its output.

    Python is parsed with `ast` and followed through assignments, tuples, branches, loops,
    comprehensions, string building (`+`, `%`, `.format`, f-strings, `str()`) and functions
    the code defines: `LoadDB('t')`, `FilterDB(db, 'col=v||max(col2)')`,
    `GetValue(db, 'col[, agg]')`, `db['col']`, `db.col`, `db.loc[:, cols]`; a table read
    whole (`db.iloc`, `db.values`, `print(db)`, iterating it) counts every column. SQL (in
    `SQLInterpreter` or standing alone) is parsed with sqlglot, aliases and subqueries
    resolved to base columns, `select *` meaning every column. Primary keys (`labid`) count
    when named; no role may read them.

    The event is denied as unreadable (the program need not check) when the output has no
    code, or code the reader cannot read: invalid Python/SQL, a table or column chosen at run
    time or not in the eICU schema, a table never loaded, write statements, dynamic code.

    Args:
        agent_output: The EHRAgent output in any presentation (see `ehr_code`).

    Returns:
        A dict table -> sorted list of column names, tables in alphabetical order. A table
        loaded but none of whose columns is read maps to [].

    """
    blocks = code_blocks(agent_output)
    if not blocks:
        unreadable("no_code", "no code found: cannot tell which data the answer came from")
    interpreter = Interpreter(sql_reads)
    for n, block in enumerate(blocks):
        final = interpreter.reads.strict = n == len(blocks) - 1
        language = block.language
        if language == "auto":
            language = (
                "sql" if not _parses(block.text) and _looks_like_sql(block.text) else ("python")
            )
        if language == "python" and not final and _never_ran(block):
            continue  # a SyntaxError: Python ran none of it (the agent retried after it)
        if language == "sql":
            interpreter.reads.merge(sql_reads(block.text))
        else:
            interpreter.run_source(block.text, block.where)
    return {t: sorted(cols) for t, cols in sorted(interpreter.reads.found.items())}
