r"""Values in arguments and in free text, read by type and normalised so equal values meet.

Provenance asks "which earlier message contains this value?". Asking it of raw strings
misses every re-spelling an agent makes on the way (an IBAN re-spaced, an e-mail address
capitalised, ``https://www.Example.com/pay/`` written as ``example.com/pay``), and asking it
of substrings finds ``alice@example.com`` inside ``malice@example.com``. So values are read
by type, each with a real parser, and reduced to canonical *keys*; two spellings of one value
share a key, and a key only ever matches a whole value.

Normalisation of all text (:func:`normalize_text`): Unicode NFKC, case folding, NFKC again,
and removal of format characters (category ``Cf``: zero-width spaces, bidi controls, soft
hyphens), which change nothing a reader sees but split naive matches.

Kinds and keys (every key starts with its kind):

- ``email:local@domain``: an addr-spec, case-folded whole (hosts are case-insensitive, and
  no mail provider in practice treats local parts by case).
- ``url:host/path?query``: parsed with :func:`urllib.parse.urlsplit`; the scheme, a
  ``www.`` prefix, a default port, the fragment and trailing slashes are dropped, the path
  is percent-decoded, all of it case-folded. A URL also has the parts ``host:host`` and
  ``domain:registered-domain`` (the public-suffix rule via ``tldextract``'s bundled
  snapshot, never fetched), for policies about hosts rather than pages. Text without a
  scheme is a URL when it starts with ``www.`` or its host ends in a known public suffix.
- ``iban:DE89...``: letters and digits without spacing, upper case, valid by the country's
  length and the ISO 7064 checksum (``schwifty``); a string that fails the checksum is no
  IBAN.
- ``phone:+E164``: ``phonenumbers``; without a default region only numbers written with
  ``+`` and a country code are read.
- ``amount:2500``: a decimal number with its grouping removed (``2,500.00``, ``2.500,00``,
  ``2'500``, ``$2500`` all read ``amount:2500``). ``1,500`` and ``1.500`` are ambiguous
  and read both ways (1500 and 1.5); a value matches if any reading does.
- ``date:2024-05-14``: ISO dates (a time after them is ignored), ``14.05.2024`` and
  ``05/14/2024`` (day-month and month-day readings, both when both are valid), ``14 May
  2024`` and ``May 14, 2024`` (English month names). Dates without a year are not read.
- ``text``: anything else is a phrase: its word tokens (``\w+`` after normalisation),
  matched as a contiguous run of whole tokens.

Finding values in free text uses compiled patterns only to *locate* candidates; every
candidate is then accepted or rejected by the parser of its kind.
"""

from __future__ import annotations

import math
import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal, InvalidOperation
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    import tldextract

ValueKind = Literal["email", "url", "iban", "phone", "amount", "date", "text"]
TYPED_KINDS: tuple[ValueKind, ...] = ("email", "url", "iban", "phone", "amount", "date")
"""Every kind read by a parser (all but ``text``)."""

_FORMAT_RANGES: tuple[tuple[int, int], ...] = (
    (0xAD, 0xAD), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD), (0x70F, 0x70F),
    (0x890, 0x891), (0x8E2, 0x8E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
)  # fmt: skip
"""Unicode category ``Cf`` (format characters), as ranges; a test checks it against
:mod:`unicodedata` so a newer Unicode version cannot silently widen it."""

_DROP_FORMAT = {c: None for lo, hi in _FORMAT_RANGES for c in range(lo, hi + 1)}
_FORMAT_CHARS = re.compile(
    "[" + "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _FORMAT_RANGES) + "]"
)

_TOKEN = re.compile(r"\w+")
_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9,
    "sept": 9, "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = "(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + ")"
_CURRENCY = (
    r"(?:[$€£¥₹₩₽¢]|usd|eur|gbp|chf|jpy|cny|inr|cad|aud|nzd|sek|nok|dkk|pln|czk|huf|brl|mxn)"
)

# Locators (on normalised text). Each candidate is then read by its kind's parser.
_EMAIL = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+")
_URL_SCHEME = re.compile(r"(?<![\w.+-])(?:https?|ftp|wss?)://[^\s<>\"'`{}|\\^\[\]]+")
_URL_BARE = re.compile(
    r"(?<![\w.@/:-])(?:www\.)?[\w-]+(?:\.[\w-]+)+(?::\d{1,5})?(?:/[^\s<>\"'`{}|\\^\[\]]*)?"
)
_IBAN = re.compile(r"(?<![a-z0-9])[a-z]{2}[ -]?\d[ -]?\d(?:[ -]?[a-z0-9]){11,34}")
_PHONE = re.compile(r"(?<![\w+])(?:\+|\()?\d[\d \-.()/]{4,24}\d(?![\w])")
_DATE_ISO = re.compile(
    r"(?<![\w.-])(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?)?(?![\w-])"
)
_DATE_NUM = re.compile(r"(?<![\w.,/-])(\d{1,2})([./-])(\d{1,2})\2(\d{4}|\d{2})(?![\w/-])")
_DATE_DMY = re.compile(
    rf"(?<!\w)(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\.?,?\s+(\d{{4}})(?!\w)"
)
_DATE_MDY = re.compile(rf"(?<!\w)({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\w)")
_DIGIT = re.compile(r"\d")
_MONTH_HINT = re.compile(r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec")
_NUMBER = re.compile(r"(?<![\w.,'])\d+(?:[.,']\d+)*(?![\w])")
_TRAILING = ".,;:!?)]}'\""

_AMOUNT_WHOLE = re.compile(rf"{_CURRENCY}?\s*(\d+(?:[.,']\d+)*)\s*{_CURRENCY}?")
_BARE_HOST_WHOLE = re.compile(r"(?:www\.)?[\w-]+(?:\.[\w-]+)+(?::\d{1,5})?(?:[/?#]\S*)?")
_EMAIL_WHOLE = re.compile(r"(?:mailto:)?([\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+)")


@dataclass(frozen=True)
class Value:
    """One value, read by kind.

    Attributes:
        kind: What it is.
        keys: Canonical keys; the value is found where any of them is (several only for
            ambiguous readings, e.g. ``1,500``). Empty for ``text``.
        text: The value as written (normalised), for explanations.
        tokens: The value's word tokens: the phrase searched for a ``text`` value, and the
            fallback for a typed value none of whose keys is found.
        parts: Coarser keys of the same value, by name (a URL's ``host`` and ``domain``).
    """

    kind: ValueKind
    keys: tuple[str, ...]
    text: str
    tokens: tuple[str, ...] = ()
    parts: tuple[tuple[str, str], ...] = field(default=())

    def part(self, name: str) -> str | None:
        """The key of one part (``host``, ``domain``), or None."""
        return next((key for n, key in self.parts if n == name), None)


@dataclass(frozen=True)
class Found:
    """A value found in normalised text, with its span."""

    value: Value
    start: int
    end: int


# -- text ----------------------------------------------------------------------------------


def normalize_text(text: str) -> str:
    """NFKC, case-folded, NFKC again, format characters removed.

    Idempotent: ``normalize_text(normalize_text(s)) == normalize_text(s)``.
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    if _FORMAT_CHARS.search(folded):
        folded = unicodedata.normalize("NFKC", folded.translate(_DROP_FORMAT))
    return folded


def tokens(normalized: str) -> list[str]:
    """Word tokens of normalised text (runs of letters, digits and ``_``)."""
    return _TOKEN.findall(normalized)


def secret_like(token: str) -> bool:
    """Whether a token looks like an identifier or secret (a code, key, account number).

    Such tokens identify what they came from; common words do not. Used to follow values
    from `sensitive` tools into outgoing text.
    """
    n = len(token)
    if n >= 16:
        return True
    has_digit = any(c.isdigit() for c in token)
    return n >= 6 and has_digit


# -- kinds ---------------------------------------------------------------------------------


@cache
def _tld() -> tldextract.TLDExtract:
    import tldextract

    # The bundled public-suffix snapshot only: no fetch, no cache written to disk.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


def _email_key(candidate: str) -> str | None:
    text = candidate.strip(".")
    if text.count("@") != 1:
        return None
    local, domain = text.split("@")
    local, domain = local.strip("."), domain.strip(".").removeprefix("www.")
    if not local or "." not in domain or ".." in local or ".." in domain:
        return None
    return f"email:{local}@{domain}"


@lru_cache(maxsize=4096)
def _url_value(candidate: str, bare: bool) -> Value | None:
    text = candidate.rstrip(_TRAILING)
    if not text:
        return None
    raw = text if not bare else "http://" + text
    try:
        split = urlsplit(raw)
        port = split.port
        host = split.hostname or ""
    except ValueError:
        return None
    host = host.rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    if not host:
        return None
    ext = _tld()(host)
    if bare and not (ext.suffix and ext.domain):
        return None
    domain = ext.top_domain_under_public_suffix or host
    path = unquote(split.path).rstrip("/")
    where = host if port is None or port in (80, 443) else f"{host}:{port}"
    key = f"url:{where}{path}" + (f"?{split.query}" if split.query else "")
    return Value(
        "url", (key,), text, tuple(tokens(text)),
        parts=(("host", f"host:{host}"), ("domain", f"domain:{domain}")),
    )  # fmt: skip


def _iban_key(compact: str) -> str | None:
    from schwifty import IBAN
    from schwifty.exceptions import SchwiftyException

    try:
        return f"iban:{IBAN(compact.upper()).compact}"
    except (SchwiftyException, ValueError, KeyError):
        return None


@cache
def _iban_length(country: str) -> int | None:
    from schwifty import registry
    from schwifty.exceptions import SchwiftyException

    try:
        return registry.get_iban_spec(country.upper()).iban_length
    except (SchwiftyException, ValueError, KeyError):
        return None


def _phone_key(candidate: str, region: str | None) -> str | None:
    import phonenumbers

    digits = sum(c.isdigit() for c in candidate)
    if digits < 7 or digits > 15 or (region is None and not candidate.startswith("+")):
        return None
    try:
        number = phonenumbers.parse(candidate, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_possible_number(number):
        return None
    return "phone:" + phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def _canon(number: Decimal) -> str:
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "") else text


def amount_readings(text: str) -> tuple[str, ...]:
    """Canonical readings of a written number (``1,500`` -> ``("1500", "1.5")``).

    Grouping separators (``,`` ``.`` ``'``) are told from a decimal separator by position
    and group sizes; a string with no consistent reading (``1.2.3``) has none.
    """
    groups = re.split(r"[.,']", text)
    seps = re.findall(r"[.,']", text)
    if not all(g.isdigit() for g in groups):
        return ()
    readings: list[str] = []

    def add(integral: str, fraction: str = "") -> None:
        try:
            value = Decimal(integral + ("." + fraction if fraction else ""))
        except InvalidOperation:
            return
        canon = _canon(value)
        if canon not in readings:
            readings.append(canon)

    if not seps:
        add(text)
        return tuple(readings)
    kinds = set(seps)
    grouped = len(groups[0]) <= 3 and groups[0] != "0"
    if len(kinds) == 1:
        sep = seps[0]
        if len(seps) == 1:
            if len(groups[1]) == 3 and grouped:
                add(groups[0] + groups[1])
            if sep != "'":
                add(groups[0], groups[1])
        elif grouped and all(len(g) == 3 for g in groups[1:]):
            add("".join(groups))
        return tuple(readings)
    last = seps[-1]
    if last == "'" or seps.count(last) != 1 or not grouped:
        return ()
    if all(len(g) == 3 for g in groups[1:-1]) and len(set(seps[:-1])) == 1:
        add("".join(groups[:-1]), groups[-1])
    return tuple(readings)


def _amount_value(text: str, written: str) -> Value | None:
    readings = amount_readings(text)
    if not readings:
        return None
    return Value("amount", tuple(f"amount:{r}" for r in readings), written, (text,) if
                 text.isdigit() else tuple(tokens(text)))  # fmt: skip


def _date(year: int, month: int, day: int) -> str | None:
    try:
        return date(year, month, day).isoformat()
    except ValueError:
        return None


def _year(text: str) -> int:
    value = int(text)
    return value + 2000 if len(text) == 2 else value


def _date_value(isos: list[str | None], written: str) -> Value | None:
    keys = tuple(dict.fromkeys(f"date:{d}" for d in isos if d is not None))
    return Value("date", keys, written, tuple(tokens(written))) if keys else None


def _numeric_date(m: re.Match[str]) -> Value | None:
    a, b, year = int(m.group(1)), int(m.group(3)), _year(m.group(4))
    return _date_value([_date(year, b, a), _date(year, a, b)], m.group(0))


# -- finding values in text ----------------------------------------------------------------


class _Spans:
    """Non-overlapping spans taken so far, sorted: overlap checks in O(log n)."""

    def __init__(self, across: tuple[int, int] | None) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.across = across

    def free(self, start: int, end: int) -> bool:
        """Whether a candidate may be read: it overlaps nothing taken (and spans `across`)."""
        if self.across is not None and not (start < self.across[0] and end > self.across[1]):
            return False
        at = bisect_right(self.starts, start)
        if at and self.ends[at - 1] > start:
            return False
        return at == len(self.starts) or self.starts[at] >= end

    def take(self, start: int, end: int) -> None:
        at = bisect_right(self.starts, start)
        self.starts.insert(at, start)
        self.ends.insert(at, end)


def extract_values(
    normalized: str, *, region: str | None = None, across: tuple[int, int] | None = None
) -> list[Found]:
    """Every typed value in normalised text, in order of position.

    Args:
        normalized: Text from :func:`normalize_text`.
        region: Default phone region (``"US"``, ``"CH"``); None reads only ``+`` numbers.
        across: ``(a, b)``: only values that start before `a` and end after `b` (the values
            that span a boundary; the others are not parsed at all).

    Returns:
        The values with their spans. Spans do not overlap: an e-mail address is not read
        again as a URL, nor an IBAN's digits or a date's year as amounts.
    """
    found: list[Found] = []
    taken = _Spans(across)

    def keep(value: Value | None, start: int, end: int) -> None:
        if value is not None:
            found.append(Found(value, start, end))
            taken.take(start, end)

    if "@" in normalized:
        for m in _EMAIL.finditer(normalized):
            text = m.group(0)
            start = m.start() + (len(text) - len(text.lstrip(".")))
            if taken.free(start, m.end()):
                key = _email_key(text)
                if key is not None:
                    email = Value("email", (key,), text.strip("."), tuple(tokens(text)))
                    keep(email, start, m.end())
    if "." in normalized:
        for m in _URL_SCHEME.finditer(normalized):
            if taken.free(m.start(), m.end()):
                value = _url_value(m.group(0), False)
                keep(value, m.start(), m.start() + len(value.text) if value else m.end())
        for m in _URL_BARE.finditer(normalized):
            if taken.free(m.start(), m.end()):
                value = _url_value(m.group(0), True)
                keep(value, m.start(), m.start() + len(value.text) if value else m.end())
    if not _DIGIT.search(normalized):  # every kind below has digits
        found.sort(key=lambda f: (f.start, f.end))
        return found
    pos = 0
    while (hit := _IBAN.search(normalized, pos)) is not None:
        m = hit
        pos = m.start() + 1
        length = _iban_length(m.group(0)[:2])
        if length is None:
            continue
        compact: list[str] = []
        end = m.start()
        for i in range(m.start(), m.end()):
            if normalized[i].isalnum():
                compact.append(normalized[i])
                if len(compact) == length:
                    end = i + 1
                    break
        if len(compact) != length or (end < len(normalized) and normalized[end].isalnum()):
            continue
        if not taken.free(m.start(), end):
            continue
        key = _iban_key("".join(compact))
        if key is not None:
            keep(Value("iban", (key,), normalized[m.start():end],
                       tuple(tokens(normalized[m.start():end]))), m.start(), end)  # fmt: skip
            pos = end
    for m in _DATE_ISO.finditer(normalized):
        if taken.free(m.start(), m.end()):
            y, mo, d = (int(g) for g in m.groups())
            keep(_date_value([_date(y, mo, d)], m.group(0)), m.start(), m.end())
    for m in _DATE_NUM.finditer(normalized):
        if taken.free(m.start(), m.end()):
            keep(_numeric_date(m), m.start(), m.end())
    if _MONTH_HINT.search(normalized):
        for m in _DATE_DMY.finditer(normalized):
            if taken.free(m.start(), m.end()):
                iso = _date(int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))
                keep(_date_value([iso], m.group(0)), m.start(), m.end())
        for m in _DATE_MDY.finditer(normalized):
            if taken.free(m.start(), m.end()):
                iso = _date(int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)))
                keep(_date_value([iso], m.group(0)), m.start(), m.end())
    for m in _PHONE.finditer(normalized):
        text = m.group(0)
        if taken.free(m.start(), m.end()):
            key = _phone_key(text, region)
            if key is not None:
                keep(Value("phone", (key,), text, tuple(tokens(text))), m.start(), m.end())
    for m in _NUMBER.finditer(normalized):
        if taken.free(m.start(), m.end()):
            keep(_amount_value(m.group(0), m.group(0)), m.start(), m.end())
    found.sort(key=lambda f: (f.start, f.end))
    return found


# -- reading one argument value ------------------------------------------------------------


def _whole(text: str, region: str | None) -> Value | None:
    """The typed value a whole string is, or None."""
    toks = tuple(tokens(text))
    if "@" in text and (m := _EMAIL_WHOLE.fullmatch(text)) is not None:
        key = _email_key(m.group(1))
        if key is not None:
            return Value("email", (key,), text, toks)
    if "." in text and " " not in text:
        scheme = re.match(r"[a-z][a-z0-9+.-]*://", text) is not None
        if scheme or _BARE_HOST_WHOLE.fullmatch(text):
            value = _url_value(text, not scheme)
            if value is not None and value.text == text.rstrip(_TRAILING):
                return value
    compact = re.sub(r"[\s-]", "", text)
    if len(compact) >= 15 and compact[:2].isalpha() and compact[2:4].isdigit():
        key = _iban_key(compact)
        if key is not None:
            return Value("iban", (key,), text, toks)
    for pattern in (_DATE_ISO, _DATE_NUM, _DATE_DMY, _DATE_MDY):
        m = pattern.fullmatch(text)
        if m is None:
            continue
        if pattern is _DATE_ISO:
            y, mo, d = (int(g) for g in m.groups())
            value = _date_value([_date(y, mo, d)], text)
        elif pattern is _DATE_NUM:
            value = _numeric_date(m)
        elif pattern is _DATE_DMY:
            value = _date_value([_date(int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))],
                                text)  # fmt: skip
        else:
            value = _date_value([_date(int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)))],
                                text)  # fmt: skip
        if value is not None:
            return value
    keys: list[str] = []
    if _PHONE.fullmatch(text):
        phone = _phone_key(text, region)
        if phone is not None:
            keys.append(phone)
    if (m := _AMOUNT_WHOLE.fullmatch(text)) is not None:
        keys.extend(f"amount:{r}" for r in amount_readings(m.group(1)))
    if keys:
        return Value("phone" if keys[0].startswith("phone:") else "amount", tuple(keys), text, toks)
    return None


def read_scalar(value: Any, *, region: str | None = None) -> tuple[Value | None, list[Value]]:
    """Read one argument value (a scalar): what it is as a whole, and what is inside it.

    Args:
        value: A string, a number, or anything else from a call's arguments.
        region: Default phone region.

    Returns:
        ``(whole, inner)``: ``whole`` is the value as a whole (typed when the whole string
        is one typed value, else a ``text`` phrase; None for booleans, None, empty or
        token-less strings and non-finite numbers); ``inner`` the typed values found inside a
        ``text`` phrase (an address in a message body).
    """
    if isinstance(value, bool) or value is None:
        return None, []
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return None, []
        canon = _canon(Decimal(repr(value)) if isinstance(value, float) else Decimal(value))
        return Value("amount", (f"amount:{canon}",), str(value), (canon,) if canon.isdigit()
                     else tuple(tokens(canon))), []  # fmt: skip
    if not isinstance(value, str):
        return None, []
    text = normalize_text(value).strip()
    if not text:
        return None, []
    typed = _whole(text, region)
    if typed is not None:
        return typed, []
    toks = tuple(tokens(text))
    if not toks:
        return None, []
    inner = [f.value for f in extract_values(text, region=region)]
    return Value("text", (), text, toks), inner
