"""Declared secrets: values no argument of any call may carry, however they are spelled.

A deployment knows some of its secrets by value (an API key, an admin password, a customer's
card number): it declares them in the policy's ``secrets:`` section, literally or by the
name of the environment variable that holds them::

    secrets:
      shop_api_key: {env: SHOP_API_KEY}      # read from the environment when a call is checked
      admin_password: {value: "correct horse battery staple"}

A secret from the environment is never stored in clear: the policy model, its dump, the
decision and the thread's state hold only the variable's name; the value is read from the
environment at each check and used for that check only. A variable that is not set makes
the predicate open (None: a rule that needs it denies), never "no secret found".

Finding one (:func:`find_secrets`). Each argument value is read in several views: as
written, reversed and ROT13; HTML character references, string escapes (``&#115;``, a
backslash and ``u0073`` or ``163``) and quoted-printable read; character codes (six or
more decimal or binary numbers, or hex bytes, apart by separators); URL-decoded
(repeatedly, ``%2B``, ``+`` and ``%u0073``);
every run of base64 (standard and URL-safe, decoded at each of the four alignments, so a
secret in the middle of an encoded blob is found; also with line breaks removed), of
base32 (either case, each of the eight alignments) and of hex (both alignments); and each
decoded view once more (base64 of URL-encoded text). The
predicate also reads the values of the arguments joined, in order (a secret split across
two arguments or the elements of a list). Each view is normalised
(:func:`guardagent.trace.values.normalize_text`: NFKC, case folding, format characters
removed) and searched for each secret as a substring, as written, reversed and in ROT13
(turned before it was encoded); when a secret has at least
:data:`COMPACT_MIN` letters and digits, also with everything but letters and digits
removed from both (``s-k 1 2 3`` is ``sk123``). All of it is linear in the argument's
length (a constant number of views, each at most a few
times the text; substring search in C).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import os
import quopri
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from html import unescape as unescape_html
from typing import Any
from urllib.parse import unquote_plus

from guardagent.trace.budget import check_budget
from guardagent.trace.normal import unescape
from guardagent.trace.values import normalize_text

MIN_CHARS = 6
"""A secret shorter than this (normalised) would be found everywhere: a configuration error."""

COMPACT_MIN = 8
"""Letters and digits a secret needs before it is also looked for with separators removed."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")
_HEX_RUN = re.compile(r"[0-9A-Fa-f]{8,}")
_NOT_ALNUM = re.compile(r"[\W_]+")
_DEPTH = 2
_PCT_U = re.compile(r"%[uU]([0-9A-Fa-f]{4})")
_OCTAL = re.compile(r"\\([0-7]{1,3})")
_QP = re.compile(r"=[0-9A-F]{2}")
_DIGITS = re.compile(r"[0-9]+")
# runs of 6+ numbers (or hex bytes) apart by 1-3 separators: one parse at each position,
# and a failed try stops within 6 numbers, so finditer stays linear
_CODES = re.compile(r"(?:[0-9]{1,8}[^0-9A-Za-z]{1,3}){5,}[0-9]{1,8}")
_HEX_BYTES = re.compile(r"(?:(?:0[xX])?[0-9A-Fa-f]{2}[\s,;:]{1,3}){5,}(?:0[xX])?[0-9A-Fa-f]{2}")
_HEX_SEPARATORS = re.compile(r"0[xX]|[\s,;:]+")


class SecretsError(ValueError):
    """A ``secrets:`` section that cannot be used; `problems` lists every problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class SecretSpec:
    """One declared secret: its name and where its value is.

    Attributes:
        name: What decisions call it (the value is never shown).
        env: The environment variable holding it (the value is never stored).
        value: The literal value (written in the policy file itself).
    """

    name: str
    env: str | None = None
    value: str | None = field(default=None, repr=False)

    def resolve(self) -> str | None:
        """The secret's value now (None: its environment variable is not set or empty)."""
        if self.env is not None:
            return os.environ.get(self.env) or None
        return self.value

    def to_json(self) -> dict[str, str]:
        """The file format: the variable's name, or the literal as the file wrote it."""
        return {"env": self.env} if self.env is not None else {"value": self.value or ""}


@dataclass(frozen=True)
class Secrets:
    """The policy's declared secrets."""

    specs: tuple[SecretSpec, ...] = ()

    @classmethod
    def from_mapping(cls, raw: Any) -> Secrets:
        """Read a ``secrets:`` section (``{name: {env: VAR} | {value: "..."}}``).

        Raises:
            SecretsError: every problem found.
        """
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            raise SecretsError(["secrets must be a mapping of name to {env: VAR} or {value: ...}"])
        problems: list[str] = []
        specs: list[SecretSpec] = []
        for name, spec in raw.items():
            where = f"secrets.{name}"
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                problems.append(f"secrets: name {name!r} must be letters, digits, _ or -")
                continue
            if not isinstance(spec, Mapping) or len(spec) != 1 or not set(spec) <= {"env", "value"}:
                problems.append(f"{where}: give exactly one of env: VAR or value: '...'")
                continue
            if "env" in spec:
                env = spec["env"]
                if not isinstance(env, str) or not _ENV.fullmatch(env):
                    problems.append(f"{where}: env must be an environment variable's name")
                    continue
                specs.append(SecretSpec(name, env=env))
                continue
            value = spec["value"]
            if not isinstance(value, str | int) or isinstance(value, bool):
                problems.append(f"{where}: value must be a string")
                continue
            if len(normalize_text(str(value)).strip()) < MIN_CHARS:
                problems.append(f"{where}: a secret needs at least {MIN_CHARS} characters (a "
                                "shorter one would be found in ordinary text)")  # fmt: skip
                continue
            specs.append(SecretSpec(name, value=str(value)))
        if problems:
            raise SecretsError(problems)
        return cls(tuple(specs))

    def resolve(self) -> tuple[list[tuple[str, str]], list[str]]:
        """``([(name, value)], [names whose value is missing or too short])`` for one check."""
        found: list[tuple[str, str]] = []
        missing: list[str] = []
        for spec in self.specs:
            value = spec.resolve()
            if value is None or len(normalize_text(value).strip()) < MIN_CHARS:
                missing.append(spec.name)
            else:
                found.append((spec.name, value))
        return found, missing

    def to_json(self) -> dict[str, dict[str, str]]:
        """The file format (no value from the environment)."""
        return {s.name: s.to_json() for s in self.specs}


# -- finding secrets -----------------------------------------------------------------------


def _b64_views(text: str) -> list[str]:
    out: list[str] = []
    for m in _B64_RUN.finditer(text):
        run = m.group(0).replace("-", "+").replace("_", "/")
        for offset in range(4):
            part = run[offset:]
            rest = len(part) % 4  # a last group cut short: pad it (one char alone is noise)
            part = part[:-1] if rest == 1 else part + "=" * ((4 - rest) % 4)
            if len(part) < 8:
                continue
            try:
                raw = base64.b64decode(part, validate=True)
            except (binascii.Error, ValueError):
                continue
            out.append(raw.decode("utf-8", "replace"))
    return out


_B32_RUN = re.compile(r"[A-Za-z2-7]{8,}")
_B32_TAIL = {0: 0, 1: 0, 2: 2, 3: 2, 4: 4, 5: 5, 6: 5, 7: 7}
"""Characters kept of a last group of 8 cut short: the longest length base32 can end with."""


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


def _hex_views(text: str) -> list[str]:
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


def _url_view(text: str) -> str | None:
    if "%" not in text and "+" not in text:
        return None
    decoded = _PCT_U.sub(lambda m: chr(int(m.group(1), 16)), text)  # %u0073: IIS, escape()
    for _ in range(3):
        nxt = unquote_plus(decoded)
        if nxt == decoded:
            break
        decoded = nxt
    return decoded if decoded != text else None


def _text_views(text: str) -> list[tuple[str, str]]:
    r"""Character-level re-spellings a model can be told to use.

    HTML references, string escapes (octal ones too: ``\163``), quoted-printable
    (``=73``), and character codes: decimal or binary numbers, one a character
    (``115 107 45``, ``[115, 107]``, ``01110011``), and hex bytes with separators
    (``73 6b``, ``0x73, 0x6b``).
    """
    out: list[tuple[str, str]] = []
    if "&" in text and (html := unescape_html(text)) != text:
        out.append(("html", html))
    if "\\" in text:
        if (read := unescape(text)) != text:
            out.append(("escapes", read))
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
    for m in _HEX_BYTES.finditer(text):
        out.extend(("hex", v) for v in _hex_views(_HEX_SEPARATORS.sub("", m.group(0))))
    return out


def _char(code: int) -> str:
    return chr(code) if 32 <= code < 0x110000 and not 0xD800 <= code < 0xE000 else " "


def views(text: str, turned: bool = True) -> list[tuple[str, str]]:
    """``(encoding, view)`` of a value, read as the module says (nested).

    As written, reversed and ROT13 (without `turned`: as written only), then HTML-,
    escape-, URL-, base64- (also with line breaks removed), base32- and hex-decoded; a
    decoded view at most half of whose characters are invalid UTF-8 is decoded once more.
    """
    start = [("plain", text)]
    if turned:
        start += [("reversed", text[::-1]), ("rot13", codecs.encode(text, "rot13"))]
    out: list[tuple[str, str]] = list(start)
    frontier = start
    for _ in range(_DEPTH):
        found: list[tuple[str, str]] = []
        for how, view in frontier:
            check_budget()  # long attacker text: many views (the trace's reading budget)
            prefix = "" if how == "plain" else how + "+"
            url = _url_view(view)
            if url is not None:
                found.append((prefix + "url", url))
            found.extend((prefix + h, v) for h, v in _text_views(view))
            found.extend((prefix + "base64", v) for v in _b64_views(view))
            unwrapped = "".join(view.split())
            if unwrapped != view:  # base64 wrapped in lines (MIME: 76 a line)
                found.extend((prefix + "base64", v) for v in _b64_views(unwrapped))
            found.extend((prefix + "base32", v) for v in _b32_views(view))
            found.extend((prefix + "hex", v) for v in _hex_views(view))
        out.extend(found)
        # a view mostly of bytes that are not UTF-8 is a run decoded at the wrong alignment
        # (or binary): searched, but not decoded again
        frontier = [(h, v) for h, v in found if 2 * v.count("\ufffd") <= len(v)]
    return out


def _compact(text: str) -> str:
    return _NOT_ALNUM.sub("", text)


def _turns(secret: str, compact: str | None) -> list[tuple[str, tuple[str, str | None]]]:
    """The secret as written, reversed and in ROT13: a view may hold it turned, then encoded."""
    def rot(t: str) -> str:
        return codecs.encode(t, "rot13")

    return [("", (secret, compact)),
            (" (reversed)", (secret[::-1], compact[::-1] if compact else None)),
            (" (rot13)", (rot(secret), rot(compact) if compact else None))]  # fmt: skip


def find_secrets(text: str, secrets: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(secret name, encoding)`` for each declared secret the text carries (see module)."""
    wanted = []
    for name, value in secrets:
        norm = normalize_text(value).strip()
        short = _compact(norm)
        wanted.append((name, norm, short if len(short) >= COMPACT_MIN else None))
    hits: dict[str, str] = {}
    for how, view in views(text):
        check_budget()
        norm = normalize_text(view)
        compact: str | None = None
        for name, secret, secret_compact in wanted:
            if name in hits:
                continue
            for turn, (form, form_compact) in _turns(secret, secret_compact):
                if form in norm:
                    hits[name] = how + turn
                elif form_compact is not None:
                    if compact is None:
                        compact = _compact(norm)
                    if form_compact in compact:
                        hits[name] = how + turn
                if name in hits:
                    break
        if len(hits) == len(wanted):
            break
    return list(hits.items())
