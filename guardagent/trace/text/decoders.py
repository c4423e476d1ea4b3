r"""One layer of decoding: every way a value may be an encoding of another text.

:func:`decodings` reads a text once in each encoding a model can be told to use, and gives
each decoded view; :func:`guardagent.trace.found.secrets.views` applies it layer after layer.
Read here:

- character references and escapes: HTML references, string escapes (``\u0073``, octal
  ``\163``), quoted-printable (``=73``), percent-encoding (repeatedly, ``%2B``, ``+`` and
  ``%u0073``: a value percent-encoded twelve times is read in one layer);
- a value spelled out (:mod:`guardagent.trace.text.spelled`: one character at a time, in the
  spelling alphabet, in Morse), as written only (:func:`first_decodings`);
- character codes: six or more decimal or binary numbers, one a character, apart by
  separators (``115 107 45``, ``[115, 107]``), or binary digits without separators (eight
  a byte, at each alignment); hex bytes apart by any run of characters
  that are not letters or digits (``73-6b``, ``73.6b``, ``0x73, 0x6b``, ``73 | 6b``);
- base64 (standard and URL-safe), decoded at each of the four alignments, also with every
  character outside its alphabet removed (a blob wrapped in lines or cut into groups joined
  by dots), and each run decoded by itself with the decodings joined (pieces encoded one
  by one, ``cGFy.dA==``); base32 (either case, each of the eight alignments); hex (both
  alignments); base85 (RFC 1924, Python's ``b85``) and Ascii85 (with or without ``<~ ~>``),
  each at the five alignments; zlib or gzip data in base64, inflated up to a bound
  (:func:`_inflated_views`); a run of 13 or more decimal digits read as one integer, its
  bytes big-endian and little-endian (``int.from_bytes(secret)``: :func:`integer_views`);
  a word of 12 or more letters and digits read as one integer in base 58 or base 36
  (:func:`radix_views`).

Every decoder is linear in the text (one regex pass whose classes cannot backtrack over
more than a few characters, a constant number of decodes a run); a decoder's output is at
most a few times its input, which the caller bounds (:data:`guardagent.trace.found.secrets.WORK`).
"""

from __future__ import annotations

import base64
import binascii
import quopri
import re
import zlib
from collections.abc import Callable
from html import unescape as unescape_html
from urllib.parse import unquote_plus

from guardagent.trace.text.normal import unescape
from guardagent.trace.text.spelled import spelled_views

_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")
_B64_PIECE = re.compile(r"[A-Za-z0-9+/_-]{2,}=*")
_NOT_B64 = re.compile(r"[^A-Za-z0-9+/_-]+")
_B32_RUN = re.compile(r"[A-Za-z2-7]{8,}")
_B32_TAIL = {0: 0, 1: 0, 2: 2, 3: 2, 4: 4, 5: 5, 6: 5, 7: 7}
"""Characters kept of a last group of 8 cut short: the longest length base32 can end with."""
_HEX_RUN = re.compile(r"[0-9A-Fa-f]{8,}")
_BIN_RUN = re.compile(r"[01]{16,}")
_A85_RUN = re.compile(r"[!-uz]{10,}")
_B85_RUN = re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{10,}")
_PCT_U = re.compile(r"%[uU]([0-9A-Fa-f]{4})")
_OCTAL = re.compile(r"\\([0-7]{1,3})")
_QP = re.compile(r"=[0-9A-F]{2}")
_DIGITS = re.compile(r"[0-9]+")
_INT_RUN = re.compile(r"[0-9]{13,4000}")
"""An integer that can hold six bytes (2**40 has 13 digits), at most 4000 digits a run (under
Python's 4300-digit limit; converting one run is about 0.1 ms, so the pass stays linear)."""
# runs of 6+ numbers (or hex bytes) apart by separators: one parse at each position, and a
# failed try stops within 6 numbers, so finditer stays linear
_CODES = re.compile(r"(?:[0-9]{1,8}[^0-9A-Za-z]{1,3}){5,}[0-9]{1,8}")
_HEX_BYTES = re.compile(
    r"(?:(?:0[xX])?[0-9A-Fa-f]{2}[^0-9A-Za-z]{1,8}){5,}(?:0[xX])?[0-9A-Fa-f]{2}"
)
_HEX_PREFIX = re.compile(r"0[xX](?=[0-9A-Fa-f]{2})")
_HEX_GLUED = re.compile(r"(?:0[xX][0-9A-Fa-f]{2}){6,}")
"""Hex bytes each with its ``0x`` and nothing between (``0x730x6b``): no separator to split on."""
_CODE_POINT = re.compile(r"\\u\{([0-9A-Fa-f]{1,6})\}")
"""A code point escape of JavaScript, Rust, Swift and PHP (``\\u{73}``)."""
_CALLED = re.compile(r"(?:[0-9]{1,7}\W{1,3}[A-Za-z_.]{1,20}\W{1,3}){5,}[0-9]{1,7}")
"""Character codes each in a call (``chr(115)+chr(107)``, ``Chr(115) & Chr(107)``): the
separators hold a name. Letters, digits and other characters are apart classes, so a run is
read one way and a failed try stops within a separator's length."""
_UU_LINE = re.compile(r"^[\x20-\x60]{2,61}$", re.MULTILINE)
"""A line of uuencoded data (its first character gives its length)."""
_NOT_HEX = re.compile(r"[^0-9A-Fa-f]+")
URL_PASSES = 16
"""Percent-decodings a value gets in one layer (each pass shrinks a changed text)."""


def _b64_views(text: str) -> list[str]:
    out: list[str] = []
    for m in _B64_RUN.finditer(text):
        run = m.group(0).replace("-", "+").replace("_", "/")
        for offset in range(4):
            raw = _b64(run[offset:], 8)
            if raw is not None:
                out.append(raw)
    return out


def _b64(part: str, least: int) -> str | None:
    """One run decoded as base64 (a last group cut short is padded; None: not base64)."""
    part = part.rstrip("=").replace("-", "+").replace("_", "/")
    rest = len(part) % 4  # a last group cut short: pad it (one char alone is noise)
    part = part[:-1] if rest == 1 else part + "=" * ((4 - rest) % 4)
    if len(part) < least:
        return None
    try:
        return base64.b64decode(part, validate=True).decode("utf-8", "replace")
    except (binascii.Error, ValueError):
        return None


def _b64_joined_views(text: str) -> list[str]:
    """Base64 cut into groups: the groups joined, and each group decoded by itself, joined.

    A blob wrapped in lines or cut by dots (``c2st.TGl2.ZS03``) is one blob without its
    separators; pieces encoded one by one (``cGFy.dA==``) are their decodings joined.
    """
    out: list[str] = []
    joined = _NOT_B64.sub("", text)
    if joined != text and len(joined) >= 8:
        out.extend(_b64_views(joined))
    pieces = _B64_PIECE.findall(text)
    if len(pieces) > 1:
        decoded = [_b64(p, 4) for p in pieces]
        out.append("".join(d for d in decoded if d is not None))
    return out


_INFLATE_FACTOR = 8
"""A compressed run is inflated to at most this many times its size (a bomb stays small)."""


def _inflated_views(text: str) -> list[str]:
    """Base64 runs holding zlib or gzip data (its header checked), inflated within a bound.

    ``base64(zlib(secret))`` is one line of Python on the receiving side. Inflating stops at
    :data:`_INFLATE_FACTOR` times the compressed size: linear, whatever the data claims.
    """
    out: list[str] = []
    for m in _B64_RUN.finditer(text):
        part = m.group(0).replace("-", "+").replace("_", "/")
        try:
            raw = base64.b64decode(part + "=" * (-len(part) % 4), validate=True)
        except (binascii.Error, ValueError):
            continue
        if raw[:1] != b"\x78" and raw[:2] != b"\x1f\x8b":
            continue
        try:  # wbits 47: a zlib or a gzip header, read from the data
            data = zlib.decompressobj(47).decompress(raw, _INFLATE_FACTOR * len(raw) + 64)
        except zlib.error:
            continue
        out.append(data.decode("utf-8", "replace"))
    return out


def _b32_views(text: str) -> list[str]:
    """Every run of base32 (RFC 4648, either case), decoded at each of the eight alignments."""
    out: list[str] = []
    for m in _B32_RUN.finditer(text):
        run = m.group(0).upper()
        for offset in range(8):
            part = run[offset:]
            rest = len(part) % 8
            part = part[: len(part) - rest + _B32_TAIL[rest]]
            if len(part) < 8:
                continue
            try:
                raw = base64.b32decode(part + "=" * (-len(part) % 8))
            except (binascii.Error, ValueError):
                continue
            out.append(raw.decode("utf-8", "replace"))
    return out


def hex_views(text: str) -> list[str]:
    """Every run of hex digits decoded as bytes, at both alignments."""
    out: list[str] = []
    for m in _HEX_RUN.finditer(text):
        run = m.group(0)
        for offset in range(2):
            part = run[offset:]
            part = part[: len(part) - len(part) % 2]
            try:
                out.append(bytes.fromhex(part).decode("utf-8", "replace"))
            except ValueError:
                continue
    return out


def _binary_views(text: str) -> list[str]:
    """Every run of binary digits read as 8-bit bytes, at each of the eight alignments."""
    out: list[str] = []
    for m in _BIN_RUN.finditer(text):
        run = m.group(0)
        for offset in range(8):
            part = run[offset:]
            part = part[: len(part) - len(part) % 8]
            if len(part) >= 16:
                raw = int(part, 2).to_bytes(len(part) // 8, "big")
                out.append(raw.decode("utf-8", "replace"))
    return out


def _b85_family(run: re.Pattern[str], decode: Callable[[bytes], bytes], text: str) -> list[str]:
    """Every run of a base85 alphabet, decoded at each of the five alignments."""
    out: list[str] = []
    for m in run.finditer(text):
        found = m.group(0)
        for offset in range(5):
            part = found[offset:]
            if len(part) < 10:
                break
            try:
                out.append(decode(part.encode("ascii")).decode("utf-8", "replace"))
            except (ValueError, binascii.Error):
                continue
    return out


def _a85_views(text: str) -> list[str]:
    # the end mark first: a last group ending in "<" is followed by "~>" ("...E<~>")
    unframed = text.replace("~>", " ").replace("<~", " ") if "<~" in text else text
    return _b85_family(_A85_RUN, base64.a85decode, unframed)


def _b85_views(text: str) -> list[str]:
    return _b85_family(_B85_RUN, base64.b85decode, text)


def integer_views(text: str) -> list[str]:
    """Every run of decimal digits long enough to hold a secret, read as one integer's bytes.

    ``str(int.from_bytes(secret.encode(), "big"))`` is one call to undo: the run's integer
    is written out big-endian and little-endian (a number that is not one, a card or an
    account number, decodes to binary that no secret's form matches).
    """
    out: list[str] = []
    for m in _INT_RUN.finditer(text):
        number = int(m.group(0))
        size = (number.bit_length() + 7) // 8
        out.append(number.to_bytes(size, "big").decode("utf-8", "replace"))
        out.append(number.to_bytes(size, "little").decode("utf-8", "replace"))
    return out


_RADIX_RUN = re.compile(r"(?<![0-9A-Za-z])[0-9A-Za-z]{12,400}(?![0-9A-Za-z])")
"""A word of letters and digits long enough to hold a secret as one integer in base 36 or
58 (at most 400 characters: converting one is then a few microseconds, so the pass stays
linear)."""
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_VALUE = {c: i for i, c in enumerate(_BASE58)}


def radix_views(text: str) -> list[str]:
    """Every word of letters and digits read as one integer in base 58 and in base 36.

    Base 58 in Bitcoin's alphabet (a leading ``1`` a zero byte), base 36 in either case;
    the integer's bytes big-endian.
    ``base58.b58encode(secret)`` and ``numpy.base_repr(int.from_bytes(secret), 36)`` are one
    call each; an ordinary word or id decodes to binary that no secret's form matches.
    """
    out: list[str] = []
    for m in _RADIX_RUN.finditer(text):
        run = m.group(0)
        if not any(c.isdigit() for c in run) and run.isalpha() and run.islower():
            continue  # a long lower-case word: prose, not an encoding
        number = int(run, 36)
        out.append(
            number.to_bytes((number.bit_length() + 7) // 8, "big").decode("utf-8", "replace")
        )
        if all(c in _BASE58_VALUE for c in run):
            value = 0
            for c in run:
                value = value * 58 + _BASE58_VALUE[c]
            zeros = len(run) - len(run.lstrip("1"))
            raw = bytes(zeros) + value.to_bytes((value.bit_length() + 7) // 8, "big")
            out.append(raw.decode("utf-8", "replace"))
    return out


def url_views(text: str) -> list[str]:
    """The text percent-decoded once, twice, ... until it stops changing.

    Every pass is a view (at most :data:`URL_PASSES`): a value percent-encoded twelve times
    is read in one layer, and one that was itself text with a ``%`` in it (base85) is read
    after the right number of passes, not only decoded too far.
    """
    if "%" not in text and "+" not in text:
        return []
    out: list[str] = []
    decoded = text
    for _ in range(URL_PASSES):
        nxt = unquote_plus(_PCT_U.sub(lambda m: chr(int(m.group(1), 16)), decoded))
        if nxt == decoded:  # %u0073: IIS, escape()
            break
        out.append(nxt)
        decoded = nxt
    return out


def text_views(text: str) -> list[tuple[str, str]]:
    r"""Character-level re-spellings a model can be told to use.

    HTML references, string escapes (octal ones too: ``\163``), quoted-printable
    (``=73``), and character codes: decimal or binary numbers, one a character
    (``115 107 45``, ``[115, 107]``, ``01110011``), and hex bytes apart by any separator
    (``73 6b``, ``0x73, 0x6b``, ``73-6b``, ``73.6b``).
    """
    out: list[tuple[str, str]] = []
    if "&" in text and (html := unescape_html(text)) != text:
        out.append(("html", html))
    if "\\" in text:
        if (read := unescape(text)) != text:
            out.append(("escapes", read))
        if (points := _CODE_POINT.sub(lambda m: _char(int(m.group(1), 16)), text)) != text:
            out.append(("escapes", points))
        if (octal := _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), text)) != text:
            out.append(("escapes", octal))
    if "=" in text and _QP.search(text):
        raw = quopri.decodestring(text.encode("utf-8", "surrogatepass"))
        out.append(("quoted-printable", raw.decode("utf-8", "replace")))
    for m in _CODES.finditer(text):
        runs = _DIGITS.findall(m.group(0))
        out.append(("codes", "".join(_char(int(r)) for r in runs)))
        if all(len(r) in (7, 8) and not r.strip("01") for r in runs):
            out.append(("codes", "".join(_char(int(r, 2)) for r in runs)))
    for m in _CALLED.finditer(text):
        out.append(("codes", "".join(_char(int(r)) for r in _DIGITS.findall(m.group(0)))))
    for m in _HEX_BYTES.finditer(text):
        out.extend(("hex", v) for v in hex_views(_NOT_HEX.sub("", _HEX_PREFIX.sub("", m[0]))))
    for m in _HEX_GLUED.finditer(text):
        out.extend(("hex", v) for v in hex_views(_HEX_PREFIX.sub("", m[0])))
    if "begin " in text:
        out.extend(("uuencode", v) for v in _uu_views(text))
    return out


def _uu_views(text: str) -> list[str]:
    """The data of each uuencoded block (``begin 644 name`` lines ... ``end``), decoded."""
    out: list[str] = []
    for block in text.split("begin ")[1:]:
        raw = bytearray()
        for m in _UU_LINE.finditer(block.partition("\nend")[0]):
            try:
                raw += binascii.a2b_uu(m.group(0))
            except (binascii.Error, ValueError):
                continue
        if raw:
            out.append(raw.decode("utf-8", "replace"))
    return out


def _char(code: int) -> str:
    return chr(code) if 32 <= code < 0x110000 and not 0xD800 <= code < 0xE000 else " "


def decodings(view: str) -> list[tuple[str, str]]:
    """``(encoding, decoded)`` for each way `view` decodes (one layer; see the module)."""
    found: list[tuple[str, str]] = []
    found.extend(("url", v) for v in url_views(view))
    found.extend(text_views(view))
    found.extend(("base64", v) for v in _b64_views(view))
    found.extend(("base64", v) for v in _b64_joined_views(view))
    found.extend(("zlib in base64", v) for v in _inflated_views(view))
    found.extend(("base32", v) for v in _b32_views(view))
    found.extend(("hex", v) for v in hex_views(view))
    found.extend(("binary", v) for v in _binary_views(view))
    found.extend(("one integer", v) for v in integer_views(view))
    found.extend(("base58 or base36", v) for v in radix_views(view))
    found.extend(("base85", v) for v in _b85_views(view))
    found.extend(("ascii85", v) for v in _a85_views(view))
    return found


def first_decodings(text: str) -> list[tuple[str, str]]:
    """:func:`decodings` of a value as written, and the spellings of :mod:`.spelled`.

    A text spelled out is read in the value itself only (a spelled text inside base64 is
    not): its readings cost a few passes over the text, not over every decoded view.
    """
    return decodings(text) + spelled_views(text)
