"""Text in and out of the CLI and case files, whatever bytes a user hands us.

Files may be UTF-8 (with or without a byte-order mark), UTF-16 or UTF-32 (with a BOM, or
UTF-16 recognised by its NUL bytes), or bytes that are no text at all (a Latin-1 file read
as UTF-8). Arguments may carry such bytes too: POSIX hands them to Python as lone surrogates
(`surrogateescape`), which no JSON encoder accepts. Everything is decoded here, once: bytes
that cannot be decoded become U+FFFD and are counted, so the caller can say so, and nothing
downstream (the guard, pydantic's JSON, a report file) ever meets a lone surrogate.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPLACEMENT = "\ufffd"

_BOMS = (  # UTF-32 first: its little-endian BOM starts with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_SNIFF_BYTES = 4096


@dataclass(frozen=True)
class Decoded:
    """Text decoded from bytes: the text, the encoding used, and how much was replaced."""

    text: str
    encoding: str
    replaced: int = 0

    def note(self, what: str) -> str | None:
        """A one-line warning when bytes were replaced, else None."""
        if not self.replaced:
            return None
        return (
            f"{what}: not valid {self.encoding.upper()}; {self.replaced} undecodable "
            f"byte sequence(s) replaced with U+FFFD"
        )


def sniff_encoding(data: bytes) -> tuple[str, int]:
    """The encoding of `data` and the length of its byte-order mark (0 without one).

    Without a BOM, text whose every other byte is NUL is UTF-16 (ASCII-range characters in
    UTF-16 have a zero high byte; UTF-8 text never holds NUL); anything else is read as UTF-8.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    sample = data[:_SNIFF_BYTES]
    half = len(sample) // 2
    if half >= 2:
        even, odd = sample[0::2].count(0), sample[1::2].count(0)
        if odd >= 0.3 * half and even <= 0.05 * half:
            return "utf-16-le", 0
        if even >= 0.3 * half and odd <= 0.05 * half:
            return "utf-16-be", 0
    return "utf-8", 0


def decode_bytes(data: bytes) -> Decoded:
    """Decode bytes as text: BOM / UTF-16 detection, then the undecodable bytes replaced."""
    encoding, skip = sniff_encoding(data)
    body = data[skip:]
    try:
        return Decoded(body.decode(encoding), encoding)
    except UnicodeDecodeError:
        text = body.decode(encoding, errors="replace")
        genuine = body.decode(encoding, errors="ignore").count(REPLACEMENT)
        return Decoded(text, encoding, text.count(REPLACEMENT) - genuine)


def read_text_file(path: str | Path) -> str:
    """A configuration file's text in any encoding an input may have (UTF-8/16/32, BOM or not).

    Unlike event text, a file that holds bytes that are not text is refused, not repaired:
    a policy or an answers file read with U+FFFD in it would say something its author did not.

    Raises:
        OSError: the file cannot be read; a directory is named as one (one line).
        ValueError: bytes that are not text in the detected encoding.
    """
    file = Path(path)
    if file.is_dir():
        raise IsADirectoryError("is a directory; give a file")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise OSError(exc.strerror or str(exc)) from None
    return strict_text(data)


def strict_text(data: bytes) -> str:
    """Bytes of a file the deployer or host wrote, as text in any Unicode encoding.

    Raises:
        ValueError: bytes that are not text in the detected encoding (refused, not repaired).
    """
    decoded = decode_bytes(data)
    if decoded.replaced:
        raise ValueError(
            f"not valid {decoded.encoding.upper()} ({decoded.replaced} "
            "undecodable byte sequence(s))"
        )
    return decoded.text


def has_surrogates(text: str) -> bool:
    """True when `text` holds a lone surrogate (no UTF-8 encoder accepts one)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def clean_text(text: str) -> Decoded:
    """A str that may hold lone surrogates, as encodable text.

    Surrogates in U+DC80..U+DCFF are raw bytes smuggled by `surrogateescape` (argv, the
    environment): the bytes are recovered and decoded like a file. Any other lone surrogate
    (from a JSON escape of half a surrogate pair) is replaced.
    """
    if not has_surrogates(text):
        return Decoded(text, "utf-8")
    try:
        return decode_bytes(text.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        out = "".join(REPLACEMENT if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
        return Decoded(out, "utf-8", out.count(REPLACEMENT) - text.count(REPLACEMENT))


def json_safe(value: Any) -> Any:
    """`value` (JSON-like data) with every string made encodable; keys included."""
    if isinstance(value, str):
        return clean_text(value).text
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


def dumps_safe(value: Any, *, indent: int | None = 2) -> str:
    """JSON text that can always be printed and written: no lone surrogate survives."""
    return json.dumps(json_safe(value), indent=indent, ensure_ascii=False)


def json_error(exc: json.JSONDecodeError) -> str:
    """`exc` in one phrase, such as "Expecting value at column 3".

    json's message for an unterminated string already ends in "at"; it gets no second one.
    """
    glue = " " if exc.msg.endswith(" at") else " at "
    return f"{exc.msg}{glue}column {exc.colno}"


class UnreadableJson(ValueError):
    """JSON that does not read, said in one line.

    Attributes:
        detail: What is wrong, without the leading "not JSON: ".
        kind: ``syntax`` (not JSON), ``encoding`` (bytes that are no Unicode text) or
            ``depth`` (nested deeper than the parser's recursion).
    """

    def __init__(self, detail: str, kind: str) -> None:
        super().__init__(f"not JSON: {detail}")
        self.detail = detail
        self.kind = kind


def load_json(
    data: str | bytes | bytearray, pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None
) -> Any:
    """JSON text, or bytes in any Unicode encoding (UTF-8/16/32, json's own detection).

    The one reading of a JSON document the host or a user hands in (a trace, a decision, a
    state file, a task): every way it can fail is one `ValueError` line, so no caller meets
    a traceback (a recursion error from deep nesting included) or words it differently.

    Raises:
        UnreadableJson: not JSON, not Unicode text, or nested too deep to read.
    """
    try:
        return json.loads(data, object_pairs_hook=pairs_hook)
    except json.JSONDecodeError as exc:
        raise UnreadableJson(f"{exc.msg}, line {exc.lineno}", "syntax") from None
    except UnicodeDecodeError:
        raise UnreadableJson("not text in a Unicode encoding", "encoding") from None
    except RecursionError:
        raise UnreadableJson("nested too deep to read", "depth") from None
