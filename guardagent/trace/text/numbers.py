"""IBANs, phone numbers and amounts, each read by its parser into a canonical key.

- ``iban:DE89...``: letters and digits without spacing, upper case, valid by the country's
  length and the ISO 7064 checksum (``schwifty``); a string that fails the checksum is no
  IBAN.
- ``phone:+E164``: ``phonenumbers``; without a default region only numbers written with
  ``+`` and a country code are read.
- ``amount:2500``: a decimal number with its grouping removed (``2,500.00``, ``2.500,00``,
  ``2'500``, ``$2500`` all read ``amount:2500``). ``1,500`` and ``1.500`` are ambiguous
  and read both ways (1500 and 1.5), and so is any single ``,`` or ``.`` before three or
  more digits (``1,5000``: 15000 and 1.5); a value matches if any reading does. A
  magnitude word right after the number is read as a bank clerk reads it (``5 Mio.``,
  ``CHF 5 million``, ``5k``: :data:`MAGNITUDES`), never as the bare number.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from functools import cache, lru_cache

from guardagent.trace.text.kinds import Value
from guardagent.trace.text.normal import tokens

CURRENCIES = frozenset(
    {
        "$",
        "€",
        "£",
        "¥",
        "₹",
        "₩",
        "₽",
        "¢",
        "usd",
        "eur",
        "gbp",
        "chf",
        "jpy",
        "cny",
        "inr",
        "cad",
        "aud",
        "nzd",
        "sek",
        "nok",
        "dkk",
        "pln",
        "czk",
        "huf",
        "brl",
        "mxn",
    }
)
_SEPARATORS = frozenset(".,'")
_E3, _E5, _E6, _E7, _E9, _E12, _E18 = (10**n for n in (3, 5, 6, 7, 9, 12, 18))
MAGNITUDES: dict[str, tuple[int, ...]] = {
    **dict.fromkeys(("hundred", "hundreds"), (100,)),
    **dict.fromkeys(("k", "thousand", "thousands", "grand", "tsd", "tausend", "mille"), (_E3,)),
    **dict.fromkeys(("lakh", "lakhs", "lac", "lacs"), (_E5,)),
    **dict.fromkeys(
        (
            "mm",
            "mn",
            "mln",
            "mio",
            "mios",
            "million",
            "millions",
            "millionen",
            "millones",
            "milioni",
            "millón",
        ),
        (_E6,),
    ),
    **dict.fromkeys(("crore", "crores"), (_E7,)),
    **dict.fromkeys(
        ("bn", "bln", "mrd", "mia", "milliard", "milliards", "milliarde", "milliarden", "miliardi"),
        (_E9,),
    ),
    **dict.fromkeys(("bio", "billionen"), (_E12,)),
    "mil": (_E3, _E6),  # Spanish and Portuguese thousand, English slang million
    "m": (_E6,),
    "b": (_E9,),  # also a size, a flat, an item (5m, 1b): read both ways
    **dict.fromkeys(("billion", "billions"), (_E9, _E12)),  # English; German, French
    **dict.fromkeys(("trillion", "trillions"), (_E12, _E18)),
}
"""Words a bank clerk reads after a number (case-folded; glued or after one space) as its
magnitude: ``CHF 5 million`` is 5,000,000, never 5. A word that means two magnitudes in the
languages a bank reads (``billion``: 10^9 in English, 10^12 in German and French) has both
readings, so they disagree and a comparison or a consent that needs one is open; so does a
single letter that may be something else (``5m`` of cable, flat ``1b``, ``room 5 b``; only
a glued ``k`` is read one way): ``5m`` is 5 and 5,000,000."""
_BOTH_WAYS = frozenset({"m", "b"})
_MAGNITUDE_SPACES = frozenset(" \u00a0\u202f")
_LONGEST_MAGNITUDE = max(map(len, MAGNITUDES))


def magnitude_end(text: str, end: int) -> int | None:
    """Where a magnitude word right after a number ending at `end` ends, or None.

    The word is glued (``5k``) or after one space (``5 Mio.``) and is whole: ``5 millionaires``
    has none. Bounded work: at most the longest word is looked at.
    """
    start = end + 1 if end < len(text) and text[end] in _MAGNITUDE_SPACES else end
    stop = start
    while stop < len(text) and stop - start <= _LONGEST_MAGNITUDE and text[stop].isalpha():
        stop += 1
    if stop == start or (stop < len(text) and (text[stop].isalnum() or text[stop] == "_")):
        return None
    return stop if text[start:stop].casefold() in MAGNITUDES else None


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
    if text[-1:].isalpha():
        return _scaled(text)
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


def _scaled(text: str) -> tuple[str, ...]:
    """The readings of a number followed by a magnitude word (``1,5 Mio`` -> ``1500000``)."""
    word = len(text)
    while word > 0 and text[word - 1].isalpha():
        word -= 1
    spaced = word > 0 and text[word - 1] in _MAGNITUDE_SPACES
    number = text[: word - 1] if spaced else text[:word]
    factors = MAGNITUDES.get(text[word:].casefold())
    if factors is None or not number[-1:].isdigit():
        return ()
    bare = amount_readings(number)
    scaled = [canon(Decimal(r) * f) for r in bare for f in factors]
    lone = len(text) - word == 1 and (spaced or text[word:].casefold() in _BOTH_WAYS)
    return tuple(dict.fromkeys([*scaled, *bare] if lone else scaled))


def amount_value(text: str, written: str) -> Value | None:
    """The amount a written number is (every reading a key), or None."""
    readings = amount_readings(text)
    if not readings:
        return None
    return Value(
        "amount",
        tuple("amount:" + r for r in readings),
        written,
        (text,) if text.isdigit() else tuple(tokens(text)),
    )


def strip_currency(text: str) -> str:
    """A whole value without a currency sign or code before or after the number."""
    text = text.strip()
    for cur in CURRENCIES:
        if text.startswith(cur):
            text = text[len(cur) :].lstrip()
            break
    for cur in CURRENCIES:
        if text.endswith(cur):
            text = text[: -len(cur)].rstrip()
            break
    return text
