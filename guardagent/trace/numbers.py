"""IBANs, phone numbers and amounts, each read by its parser into a canonical key.

- ``iban:DE89...``: letters and digits without spacing, upper case, valid by the country's
  length and the ISO 7064 checksum (``schwifty``); a string that fails the checksum is no
  IBAN.
- ``phone:+E164``: ``phonenumbers``; without a default region only numbers written with
  ``+`` and a country code are read.
- ``amount:2500``: a decimal number with its grouping removed (``2,500.00``, ``2.500,00``,
  ``2'500``, ``$2500`` all read ``amount:2500``). ``1,500`` and ``1.500`` are ambiguous
  and read both ways (1500 and 1.5), and so is any single ``,`` or ``.`` before three or
  more digits (``1,5000``: 15000 and 1.5); a value matches if any reading does.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import cache, lru_cache

from guardagent.trace.kinds import Value
from guardagent.trace.normal import tokens

CURRENCIES = frozenset({
    "$", "€", "£", "¥", "₹", "₩", "₽", "¢", "usd", "eur", "gbp", "chf", "jpy", "cny", "inr",
    "cad", "aud", "nzd", "sek", "nok", "dkk", "pln", "czk", "huf", "brl", "mxn",
})  # fmt: skip
_SEPARATORS = frozenset(".,'")


@lru_cache(maxsize=4096)
def iban_key(compact: str) -> str | None:
    """``iban:<IBAN>`` for a compact candidate that passes schwifty's checks, else None."""
    from schwifty import IBAN
    from schwifty.exceptions import SchwiftyException

    try:
        return f"iban:{IBAN(compact.upper()).compact}"
    except (SchwiftyException, ValueError, KeyError):
        return None


@cache
def iban_length(country: str) -> int | None:
    """The IBAN length of a country code (None: no IBAN country)."""
    from schwifty import registry
    from schwifty.exceptions import SchwiftyException

    try:
        return registry.get_iban_spec(country.upper()).iban_length
    except (SchwiftyException, ValueError, KeyError):
        return None


@lru_cache(maxsize=4096)
def phone_key(candidate: str, region: str | None) -> str | None:
    """``phone:+E164`` for a possible number (``+`` required without a region), else None."""
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


def canon(number: Decimal) -> str:
    """A decimal's canonical text (no exponent, no trailing zeros)."""
    text = format(number.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _split(text: str) -> tuple[list[str], list[str]]:
    groups: list[str] = []
    seps: list[str] = []
    start = 0
    for i, c in enumerate(text):
        if c in _SEPARATORS:
            groups.append(text[start:i])
            seps.append(c)
            start = i + 1
    groups.append(text[start:])
    return groups, seps


def amount_readings(text: str) -> tuple[str, ...]:
    """Canonical readings of a written number (``1,500`` -> ``("1500", "1.5")``).

    Grouping separators (``,`` ``.`` ``'``) are told from a decimal separator by position
    and group sizes; a string with no consistent reading (``1.2.3``) has none. A single
    ``,`` or ``.`` before three or more digits is also read without it (``1,5000`` is 1.5
    and 15000, ``1500.000`` 1500 and 1500000): a lenient parser (a bank's that drops
    grouping, ``locale.atof``) reads it so. Two digits or fewer are a currency's minor
    unit, read as written.
    """
    if text.isdigit():  # the common case: a plain integer
        return ((text.lstrip("0") or "0"),) if text.isascii() else ()  # int() stops at 4300 digits
    groups, seps = _split(text)
    if not all(g.isdigit() and g.isascii() for g in groups):
        return ()
    readings: list[str] = []

    def add(integral: str, fraction: str = "") -> None:
        try:
            value = Decimal(integral + ("." + fraction if fraction else ""))
        except InvalidOperation:
            return
        text = canon(value)
        if text not in readings:
            readings.append(text)

    if not seps:
        add(text)
        return tuple(readings)
    grouped = len(groups[0]) <= 3 and groups[0] != "0"
    if len(set(seps)) == 1:
        sep = seps[0]
        if len(seps) == 1:
            if (len(groups[1]) == 3 and grouped) or (sep != "'" and len(groups[1]) >= 3):
                add(groups[0] + groups[1])  # grouping, or a lenient parser dropping it
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


def amount_value(text: str, written: str) -> Value | None:
    """The amount a written number is (every reading a key), or None."""
    readings = amount_readings(text)
    if not readings:
        return None
    return Value("amount", tuple("amount:" + r for r in readings), written,
                 (text,) if text.isdigit() else tuple(tokens(text)))  # fmt: skip


def strip_currency(text: str) -> str:
    """A whole value without a currency sign or code before or after the number."""
    text = text.strip()
    for cur in CURRENCIES:
        if text.startswith(cur):
            text = text[len(cur):].lstrip()
            break
    for cur in CURRENCIES:
        if text.endswith(cur):
            text = text[: -len(cur)].rstrip()
            break
    return text
