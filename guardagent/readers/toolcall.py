r"""Reader of the tool calls an agent output is about to make, in every common presentation.

What it reads. Every pending call anywhere in the agent output, whatever the presentation;
all of them are reported (:func:`parse_tool_calls`), duplicates collapsed:

- **The project's block** (written by :mod:`guardagent.integrations.events`): an unindented
  ``TOOL: <name>`` line directly followed by an unindented ``ARGS: <one-line JSON object>``
  line (an optional ``(Tool call)`` line before them).
- **JSON**, decoded with :meth:`json.JSONDecoder.raw_decode` at each ``{`` that opens an
  object with a key (``{`` + optional whitespace + ``"``), and inside each decoded value, at
  any depth:

  - OpenAI chat: an assistant message's ``tool_calls: [{"id", "type": "function",
    "function": {"name", "arguments": "<JSON object>"}}]``, the legacy
    ``function_call: {"name", "arguments"}``, a bare ``{"name", "arguments": {...} |
    "<JSON object>"}`` (also the Responses API's ``{"type": "function_call", ...}``), and
    lists of these;
  - LangChain: ``AIMessage.tool_calls`` items ``{"name", "args", "id", "type": "tool_call"}``
    (and ``invalid_tool_calls``), in ``messages_to_dict``'s ``{"type": "ai", "data": {...}}``
    or ``model_dump()`` form;
  - Anthropic: content blocks ``{"type": "tool_use", "id", "name", "input": {...}}``, also
    inside ``{"role": "assistant", "content": [...]}``.

  Numbers read as Python's :mod:`json` reads them (``NaN`` and ``Infinity`` included: the
  rule checks treat them as uncomparable and fail closed). A call's arguments are its
  data: they are not searched for further calls. Any other
  string inside decoded JSON (a message's content, JSON written as a string) is read again
  the same way, down to :data:`MAX_STRING_NESTING` levels.
- **A final answer**: an unindented ``(Final answer)`` line directly followed by a line
  starting with ``ANSWER:``, in the output itself (never inside a JSON string). It makes "no
  call" readable: an output with a final answer and no call anywhere returns ``[]``.

Trust boundary. The agent output is attacker-influenced (tool results, pages, a steered
model). An attacker can add calls but cannot remove the real one, so every call found in
any presentation is reported and checked: there is no "last block wins". The final answer
only counts when no call and nothing that looks like a call is found anywhere, and only as
the project's block, whose conversation lines the host indents so that conversation text
can never write an unindented ``(Final answer)``, ``TOOL:`` or ``ARGS:`` line. A
presentation this module does not know (e.g. a model's private text syntax) is invisible
to it; such an output is denied as ``no_tool_call`` unless it also holds a final answer.
Python reprs (``print(message.tool_calls)``) are not parsed; their call keys count as
unparsable (below), so present calls as JSON.

Fails closed, through :func:`guardagent.readers.evidence.unreadable` (the run denies):

- ``no_tool_call``: no call and no final answer (empty output, prose, filler, undecodable
  bytes, JSON that holds no call).
- ``unparsable_tool_call``: the output holds something that *looks like* a tool call and
  cannot be read. Exactly:

  1. project block: an unindented ``TOOL:`` line whose name is empty or that is not
     directly followed by an unindented ``ARGS:`` line whose rest is one JSON object; an
     unindented ``ARGS:`` line not directly after a ``TOOL:`` line; an unindented
     ``(Tool call)`` line not directly followed by a ``TOOL:`` line;
  2. a *call marker* outside every JSON object the reader decoded: a quoted key
     ``tool_calls``, ``function_call``, ``arguments`` or ``args`` followed by ``:``, or a
     quoted value ``tool_use`` / ``tool_call`` after ``:`` (double or single quotes,
     backslash-escaped or not). That is broken or truncated JSON, JSON the decoder
     rejects, or a Python repr;
  3. in a decoded object: ``tool_calls`` that is not null or a list of call objects;
     ``function_call`` that is not null or an object with ``arguments``; an object with
     an ``arguments`` key, with ``type`` ``tool_use`` / ``tool_call``, or with ``name`` and
     ``args``, whose ``name`` is not a non-empty string or whose arguments (``arguments``,
     ``args`` or ``input``) are neither a JSON object nor a string holding exactly one
     JSON object (a blank string means no arguments);
  4. bounds on hostile input: more than :data:`MAX_FAILED_CANDIDATES` object starts where
     JSON decoding failed, or failed decodes that together re-read more than
     :data:`RESCAN_FACTOR` times the output; JSON nested deeper than the decoder can
     recurse; call-looking text (a block header or a call marker) inside more than
     :data:`MAX_STRING_NESTING` levels of JSON strings; more than :data:`MAX_CALLS`
     distinct calls.
- ``several_tool_calls``: only :func:`parse_tool_call`, the single-call reader, when the
  output holds more than one distinct call (it cannot pick one without letting an added
  call hide the real one).

Cost. Linear in the output: block headers, object starts and call markers are located with
compiled patterns (locating only; the JSON itself is parsed by :mod:`json`); a decoded
value is skipped as a whole; failed decodes are charged what they re-read and stop at
:data:`RESCAN_FACTOR` times the output (and :data:`MAX_FAILED_CANDIDATES` tries);
strings are re-read at most :data:`MAX_STRING_NESTING` levels deep.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import re2

from guardagent.readers.evidence import unreadable

MAX_FAILED_CANDIDATES = 4096
"""Object starts where JSON decoding may fail before the output counts as hostile."""

RESCAN_FACTOR = 8
"""Failed decodes may together re-read at most this many times the output (plus 64 kB)."""

MAX_STRING_NESTING = 3
"""How many levels of JSON-inside-a-JSON-string are read (call-looking text deeper: deny)."""

MAX_CALLS = 100
"""Distinct calls one output may hold (more: deny, the program's work stays bounded)."""

_HEADER = re.compile(r"^(?:TOOL:|ARGS:|\(Tool call\)|\(Final answer\))", re.M)
"""Locates the unindented lines of the project's block (the line is then read by position)."""

_OBJECT_START = re.compile(r'\{\s*"')
"""Locates a `{` that opens a JSON object with a key: where `raw_decode` is tried."""

_Q = r"""\\*["']"""
_MARKER = re2.compile(
    rf"{_Q}(?:tool_calls|function_call|arguments|args){_Q}\s*:|:\s*{_Q}(?:tool_use|tool_call){_Q}"
)
"""Locates call markers (quoted call keys, quoted call types); see the module docstring.
RE2: ``\\*["']`` backtracked over a run of backslashes (40,000 took 8 s), RE2 is linear."""


class _Twice(dict[str, Any]):
    """A decoded object that gave a key twice (`twice`): ambiguous if it is a call's argument.

    JSON readers disagree on such an object (Python's keeps the last value, others the
    first), so the tool may run with the value the guard did not check. Only a call's
    arguments are refused for it (:func:`_check_once`); other JSON is read as before.
    """

    twice = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out
    marked, seen = _Twice(out), set()
    for key, _ in pairs:  # linear: one set
        if key in seen:
            marked.twice = key
            break
        seen.add(key)
    return marked


_DECODER = json.JSONDecoder(strict=False, object_pairs_hook=_pairs)
"""Lenient about control characters in strings, as the hosts that execute the calls are;
objects that give a key twice are marked (:class:`_Twice`)."""

_LANGCHAIN_TYPES = frozenset({"tool_call", "invalid_tool_call", "tool_call_chunk"})
_MAYBE_CALL_TEXT = ("{", "TOOL:", "ARGS:", "(Tool call)", "arg", "tool_", "function_call")


class _Unparsable(Exception):
    """Something looks like a tool call and cannot be read (internal; becomes `unreadable`)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass
class _Scan:
    """What one read of an output found so far (shared by the nested string reads)."""

    budget: int
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: int = 0
    work: int = 0
    final_answer: bool = False

    def add(self, name: str, args: dict[str, Any]) -> None:
        try:
            key = json.dumps([name, args], sort_keys=True, default=repr)
        except (ValueError, RecursionError):
            raise _Unparsable(f"the arguments of tool call {name[:60]!r} nest too deeply") from None
        if key in self.calls:
            return
        if len(self.calls) >= MAX_CALLS:
            raise _Unparsable(f"more than {MAX_CALLS} distinct tool calls in one output")
        self.calls[key] = {"name": name, "args": args}


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end < 0 else end


def _object_arg(raw: Any, what: str) -> dict[str, Any]:
    """A call's arguments: a JSON object, or a string holding exactly one (blank: none)."""
    if isinstance(raw, dict):
        return _check_once(raw, what)
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            value = _DECODER.decode(raw)
        except (ValueError, RecursionError):
            raise _Unparsable(f"{what} is not valid JSON: {_quote(raw.strip())}") from None
        if isinstance(value, dict):
            return _check_once(value, what)
    raise _Unparsable(f"{what} is not a JSON object: {_quote(str(raw).strip())}")


def _check_once(args: dict[str, Any], what: str) -> dict[str, Any]:
    """`args`, unless an object in it gave a key twice (iterative: depth is hostile)."""
    stack: list[Any] = [args]
    while stack:
        node = stack.pop()
        if isinstance(node, _Twice):
            raise _Unparsable(
                f"{what} give the key {_quote(node.twice)} twice in one object "
                "(one JSON reader keeps the first value, another the last)"
            )
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return args


def _call_name(obj: dict[str, Any], where: str) -> str:
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _Unparsable(f"{where} has no tool name (name is {_quote(repr(name))})")
    return name.strip()


def _is_call_object(item: Any) -> bool:
    """Whether a `tool_calls` item is an object the reader reads as one call."""
    if not isinstance(item, dict):
        return False
    function = item.get("function")
    if isinstance(function, dict) and "arguments" in function:
        return True
    return "arguments" in item or "args" in item or item.get("type") == "tool_use"


def _read_object(obj: dict[str, Any], scan: _Scan) -> str | None:
    """Check one decoded object's call keys; record its call. Returns its arguments key."""
    if "tool_calls" in obj:
        calls = obj["tool_calls"]
        if calls is not None and not (
            isinstance(calls, list) and all(_is_call_object(c) for c in calls)
        ):
            raise _Unparsable(f"tool_calls is not a list of tool calls: {_quote(repr(calls))}")
    if "function_call" in obj:
        call = obj["function_call"]
        if call is not None and not (isinstance(call, dict) and "arguments" in call):
            raise _Unparsable(f"function_call is not a function call: {_quote(repr(call))}")
    kind = obj.get("type")
    if kind == "tool_use":
        name = _call_name(obj, "a tool_use block")
        scan.add(name, _object_arg(obj.get("input"), f"the input of tool_use {name!r}"))
        return "input"
    if "arguments" in obj:
        name = _call_name(obj, "a function call")
        scan.add(name, _object_arg(obj["arguments"], f"the arguments of call {name!r}"))
        return "arguments"
    if "args" in obj and ("name" in obj or kind in _LANGCHAIN_TYPES):
        name = _call_name(obj, "a tool call")
        scan.add(name, _object_arg(obj["args"], f"the args of tool call {name!r}"))
        return "args"
    if kind in _LANGCHAIN_TYPES:
        raise _Unparsable(f"a {kind} object has no args: {_quote(repr(obj))}")
    return None


def _walk(value: Any, depth: int, scan: _Scan) -> None:
    """Read every object and string of a decoded JSON value (iterative: depth is hostile)."""
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if any(token in node for token in _MAYBE_CALL_TEXT):
                _read_text(node, depth + 1, scan)
        elif isinstance(node, list):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            arguments = _read_object(node, scan)
            stack.extend(node[k] for k in reversed(list(node)) if k != arguments)


def _read_blocks(text: str, top: bool, scan: _Scan) -> list[tuple[int, int]]:
    """Read the project's block lines; returns the spans they cover."""
    spans: list[tuple[int, int]] = []
    args_read: set[int] = set()
    for match in _HEADER.finditer(text):
        start = match.start()
        end = _line_end(text, start)
        header = match.group(0)
        if header == "TOOL:":
            name = text[start + 5 : end].strip()
            if not name:
                raise _Unparsable("a TOOL: line names no tool")
            args_at = end + 1
            if end >= len(text) or not text.startswith("ARGS:", args_at):
                raise _Unparsable(f"TOOL: {_quote(name)} is not followed by an ARGS: line")
            args_end = _line_end(text, args_at)
            raw = text[args_at + 5 : args_end]
            scan.add(name, _object_arg(raw, f"ARGS of TOOL: {_quote(name)}"))
            args_read.add(args_at)
            spans.append((start, args_end))
        elif header == "ARGS:":
            if start not in args_read:
                raise _Unparsable("an ARGS: line without a TOOL: line right before it")
        elif text[start:end].rstrip() == header:  # a "(Tool call)" / "(Final answer)" line
            following = text[end + 1 : end + 8] if end < len(text) else ""
            if header == "(Tool call)" and not following.startswith("TOOL:"):
                raise _Unparsable("a (Tool call) line is not followed by a TOOL: line")
            if header == "(Final answer)" and top and following.startswith("ANSWER:"):
                scan.final_answer = True
    return spans


def _read_json(
    text: str, blocks: list[tuple[int, int]], depth: int, scan: _Scan
) -> list[tuple[int, int]]:
    """Decode every JSON object outside the block lines; returns the spans decoded."""
    spans: list[tuple[int, int]] = []
    pos = 0
    block = 0
    while True:
        match = _OBJECT_START.search(text, pos)
        if match is None:
            return spans
        start = match.start()
        while block < len(blocks) and blocks[block][1] <= start:
            block += 1
        if block < len(blocks) and blocks[block][0] <= start:
            pos = blocks[block][1]  # the ARGS of a block are that call's data
            continue
        try:
            value, end = _DECODER.raw_decode(text, start)
        except RecursionError:
            raise _Unparsable("JSON nested deeper than the decoder can read") from None
        except ValueError as exc:  # not JSON here, or an int too long to read
            # A failed decode parsed from `start` to where it failed, and its error counted
            # the lines before that (about 50 times faster per character): charge both, so
            # the rescans stay a bounded multiple of the output.
            scan.failures += 1
            failed_at = exc.pos if isinstance(exc, json.JSONDecodeError) else len(text)
            scan.work += failed_at - start + failed_at // 32
            if scan.failures > MAX_FAILED_CANDIDATES or scan.work > scan.budget:
                raise _Unparsable(
                    "too many places open a JSON object and do not decode "
                    f"({scan.failures} tried; hostile or mangled output)"
                ) from None
            pos = start + 1
            continue
        spans.append((start, end))
        _walk(value, depth, scan)
        pos = end


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


_SURROGATE = re.compile("[\ud800-\udfff]")  # one character class: linear
_BACKSLASHES = re.compile(r"\\\\+")
_ESCAPED = re.compile(r"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2}))")


def _unescaped(text: str) -> str:
    r"""`text` with ``\uXXXX`` and ``\xXX`` escapes read (behind any run of backslashes).

    A key the JSON decoder could not read may still be read by the host's lenient reader
    (a JSON repair, JSON5, a Python literal): ``"\u0061rguments"`` is ``"arguments"`` to it.
    Fixed-width patterns: linear.
    """
    collapsed = _BACKSLASHES.sub("\\\\", text)
    read = _ESCAPED.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), collapsed)
    return read if read.isascii() else _SURROGATE.sub("\ufffd", read)


def _marker(text: str, start: int = 0, end: int | None = None) -> str | None:
    """The first call marker in ``text[start:end]``, as written or with its escapes read."""
    gap = text[start:end]  # RE2 reads UTF-8: searching the gap encodes only the gap
    if not gap.isascii():
        gap = _SURROGATE.sub("\ufffd", gap)  # a lone surrogate (decoded "\ud800") has none
    found = _MARKER.search(gap) if gap else None
    if found is not None:
        return str(found.group(0))
    if "\\" in gap:
        found = _MARKER.search(_unescaped(gap))
        if found is not None:
            return f"{found.group(0)} (written with escapes)"
    return None


def _check_markers(text: str, covered: list[tuple[int, int]]) -> None:
    """Every call marker must lie in a decoded object or a block line (searches the gaps)."""
    gap_start = 0
    for start, end in [*covered, (len(text), len(text))]:
        marker = _marker(text, gap_start, start)
        if marker is not None:
            raise _Unparsable(
                f"{_quote(marker)} looks like part of a tool call, but no JSON object "
                "around it could be decoded (broken JSON or a Python repr)"
            )
        gap_start = max(gap_start, end)


def _read_text(text: str, depth: int, scan: _Scan) -> None:
    """Read one text (the output, or a string inside its JSON) into `scan`."""
    if depth > MAX_STRING_NESTING:
        if _HEADER.search(text) or _marker(text):
            raise _Unparsable(
                f"a tool call nested in more than {MAX_STRING_NESTING} levels of JSON strings"
            )
        return
    blocks = _read_blocks(text, depth == 0, scan)
    decoded = _read_json(text, blocks, depth, scan)
    _check_markers(text, _merge(blocks + decoded))


def parse_tool_calls(agent_output: str) -> list[dict[str, Any]]:
    """Return EVERY tool call the agent output is about to make: ``[{"name", "args"}, ...]``.

    Reads every common presentation anywhere in the output: the project's ``TOOL:`` /
    ``ARGS:`` block, OpenAI ``tool_calls`` / ``function_call`` / ``{"name", "arguments"}``
    JSON, LangChain ``{"name", "args", "type": "tool_call"}`` and Anthropic
    ``{"type": "tool_use", "name", "input"}`` objects (also inside messages). An attacker
    can add calls to an output but not remove the real one, so check EVERY call returned.

    Args:
        agent_output: The event's agent output (untrusted: never a source of user facts).

    Returns:
        The distinct calls in order of appearance, e.g.
        ``[{"name": "transfer_funds", "args": {"amount": 5000, "to": "acct-9"}}]``;
        ``[]`` only when the output is a readable final answer (``(Final answer)`` /
        ``ANSWER:``) with no call anywhere.

    Raises:
        UnreadableEvidence: ``no_tool_call`` when there is neither a call nor a final
            answer (empty output, prose); ``unparsable_tool_call`` when something looks
            like a tool call but cannot be parsed. The event is denied either way, even if
            the program catches the exception.

    """
    if not isinstance(agent_output, str):
        unreadable("no_tool_call", f"the agent output is not text ({type(agent_output).__name__})")
    scan = _Scan(budget=RESCAN_FACTOR * len(agent_output) + 65536)
    try:
        _read_text(agent_output, 0, scan)
    except _Unparsable as exc:
        unreadable("unparsable_tool_call", exc.detail)
    if not scan.calls and not scan.final_answer:
        unreadable(
            "no_tool_call",
            f"no tool call and no final answer in the agent output ({len(agent_output)} "
            "characters): cannot tell what the agent is about to do",
        )
    return list(scan.calls.values())


def parse_tool_call(agent_output: str) -> dict[str, Any]:
    """Return the ONE pending tool call of the output: ``{"name": str, "args": dict}``.

    Same reading as ``parse_tool_calls``; prefer that one and check every call. With
    several distinct calls in the output this function cannot choose one (an added call
    would hide the real one), so it denies instead.

    Args:
        agent_output: The event's agent output (conversation + pending call).

    Returns:
        ``{"name": "transfer_funds", "args": {"amount": 5000, "to": "acct-9"}}``;
        ``{"name": "", "args": {}}`` only when the output is a readable final answer.

    Raises:
        UnreadableEvidence: as ``parse_tool_calls``, and ``several_tool_calls`` when the
            output holds more than one distinct call.

    """
    calls = parse_tool_calls(agent_output)
    if not calls:
        return {"name": "", "args": {}}
    if len(calls) > 1:
        names = ", ".join(call["name"] for call in calls[:5])
        unreadable(
            "several_tool_calls",
            f"the output holds {len(calls)} tool calls ({names}); parse_tool_call reads one, "
            "parse_tool_calls reads them all",
        )
    return calls[0]
