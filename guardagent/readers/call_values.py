"""A tool call's category and amount arguments, read the way the shop and the bank read them.

A rule "a place_order call for the category alcohol needs age 21" is about alcoholic
drinks, not about the spelling ``alcohol``: a shop files ``wine``, ``Craft Beer`` and
``alcoholic beverages`` under it. A rule "transfers over 1000 need a verified user" is about
money moved: given ``-5000`` a bank either refuses or moves 5000 the other way. Comparing
the raw argument with the rule's literal lets both through, so a guard program reads the
calls with :func:`read_call_args` first:

- a **category** (an argument named ``category`` or ``*_category``) is ``"alcohol"`` when
  any of its words names an alcoholic drink or alcohol itself (a hand-written lexicon of
  drinks, styles, grapes and spirits; ``non-alcoholic beer`` counts too: fail closed); it
  keeps its spelling when every word belongs to the hand-written vocabulary of other shop
  categories (``Home & Kitchen``, ``soft drinks``); anything else (``beverages``, ``drinks``,
  ``party supplies``, a word in another language) cannot be placed and becomes None;
- an **amount** (``amount`` or ``*_amount``) stays when it is a finite number of at least 0
  (a plain decimal string such as ``"1500.00"`` is read as that number); a negative or
  non-finite number, a boolean and any other string cannot be placed and become None.

None compares with nothing (:mod:`guardagent.tools.compare`), so a rule whose condition
reads it applies (``check_tool_rules``) or its predicate is open (``tool_calls_predicates``):
the call is denied unless the user meets the requirement anyway.

Cost: linear in the argument text (one normalisation and one tokenisation per value).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from guardagent.tools.compare import normalise_text

ALCOHOL = "alcohol"


def _lexicon(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ALCOHOL_WORDS = _lexicon("""
alcohol alcoholic alcohols booze liquor liquors liqueur liqueurs spirit spirits distillery
wine wines winery vino rosé champagne prosecco cava cremant sekt lambrusco chardonnay merlot
cabernet pinot riesling sauvignon malbec syrah shiraz zinfandel grenache tempranillo
sangiovese nebbiolo gewurztraminer moscato muscat bordeaux burgundy chianti rioja barolo
beaujolais sherry madeira marsala vermouth sangria beer beers ale ales lager lagers stout
porter pilsner pils ipa bock weissbier hefeweizen brewery brewing microbrew craftbeer cider
ciders perry mead seltzer alcopop alcopops vodka whisky whiskey whiskies bourbon scotch gin
rum tequila mezcal brandy cognac armagnac calvados grappa schnapps absinthe ouzo raki arak
pastis sambuca aquavit akvavit soju sake baijiu shochu makgeolli pisco cachaca kirsch
slivovitz palinka amaretto limoncello spritz aperitif aperitifs digestif digestifs
""")
"""Words that name alcohol or an alcoholic drink (hand-written, English shop vocabulary)."""

_OTHER_WORDS = _lexicon("""
electronics electronic computer computers laptop laptops tablet tablets phone phones mobile
camera cameras audio headphones tv tvs television accessories accessory cables software book
books ebook ebooks magazine magazines comics music movie movies film films dvd video videos
game games gaming toy toys puzzle puzzles hobby hobbies craft crafts art arts clothing
clothes apparel fashion shoe shoes footwear bag bags luggage jewelry jewellery watch watches
beauty cosmetics makeup skincare haircare fragrance personal care health pharmacy medicine
medicines vitamin vitamins supplement supplements wellness hygiene home house household
kitchen kitchenware cookware dining garden gardening patio lawn furniture decor lighting
bedding bath bathroom appliance appliances cleaning tool tools hardware diy improvement
automotive car cars parts tire tires bike bikes bicycle bicycles cycling sport sports
outdoor outdoors fitness exercise camping fishing office supply supplies stationery school
pet pets dog dogs cat cats baby babies kid kids child children nursery maternity grocery
groceries food foods snack snacks produce fruit fruits vegetable vegetables meat meats
seafood fish dairy cheese milk egg eggs bakery bread cereal cereals frozen pantry candy
chocolate sweets confectionery coffee tea teas juice juices soda sodas water soft drink
drinks lemonade smoothie smoothies organic gluten free vegan baking spices condiments sauces
pasta rice gift gifts card cards flower flowers plant plants seeds industrial scientific
instruments musical collectibles party supplies costume costumes products product items item
goods and of for the with new
""")
"""Words of other shop categories (hand-written). ``drink(s)`` is placed only after
``soft``; alone it is unplaced (below)."""

_UNPLACED_ALONE = frozenset(
    {
        "drink",
        "drinks",
        "gift",
        "gifts",
        "party",
        "supplies",
        "products",
        "product",
        "items",
        "item",
        "goods",
        "and",
        "of",
        "for",
        "the",
        "with",
        "new",
        "free",
        "card",
        "cards",
        "organic",
    }
)
"""Words that place nothing by themselves: a category made only of them is unplaced."""

_WORD = re.compile(r"[^\W_]+")
_PLAIN_DECIMAL = re.compile(r"[0-9]{1,30}(?:\.[0-9]{1,30})?")


def _words(text: str) -> list[str]:
    return _WORD.findall(normalise_text(text))


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


def place_category(value: Any) -> str | None:
    """A category as the shop files it: ``"alcohol"``, the category itself, or None.

    Args:
        value: The call's category argument.

    Returns:
        ``"alcohol"`` when a word names alcohol or an alcoholic drink; the value when it is
        a string whose every word is a known other category word (and not only filler such
        as ``products`` or ``drinks``); None when it cannot be placed.
    """
    if not isinstance(value, str):
        return None
    words = _words(value)
    if any(w in _ALCOHOL_WORDS or _stem(w) in _ALCOHOL_WORDS for w in words):
        return ALCOHOL
    if not words or not all(w in _OTHER_WORDS or _stem(w) in _OTHER_WORDS for w in words):
        return None
    for i, word in enumerate(words):  # "drinks" is a soft drink only right after "soft"
        if word in ("drink", "drinks") and (i == 0 or words[i - 1] != "soft"):
            return None
    if all(w in _UNPLACED_ALONE for w in words):
        return None
    return value


def read_amount(value: Any) -> int | float | Decimal | None:
    """An amount as the bank moves it: a finite number of at least 0, or None.

    Args:
        value: The call's amount argument.

    Returns:
        The number (a plain decimal string such as ``"1500.00"`` as a Decimal); None for a
        negative or non-finite number, a boolean, or any other value.
    """
    number: int | float | Decimal
    if isinstance(value, bool):
        return None
    if isinstance(value, int | Decimal):
        number = value
    elif isinstance(value, float):
        number = value
        if not math.isfinite(value):
            return None
    elif isinstance(value, str) and _PLAIN_DECIMAL.fullmatch(value.strip()):
        number = Decimal(value.strip())
    else:
        return None
    if isinstance(number, Decimal) and not number.is_finite():
        return None
    return number if number >= 0 else None


def _kind(arg: str) -> str | None:
    name = arg.strip().lower()
    if name == "category" or name.endswith("_category"):
        return "category"
    if name == "amount" or name.endswith("_amount"):
        return "amount"
    return None


def read_call_args(calls: list[dict[str, Any]] | dict[str, Any]) -> list[dict[str, Any]]:
    """Every call with its category and amount arguments read as the shop and bank read them.

    A ``category`` / ``*_category`` argument becomes ``"alcohol"`` when it names any
    alcoholic drink (``wine``, ``Craft Beer``, ``alcoholic beverages``), stays as it is when
    it is a known other shop category, and becomes None when it cannot be placed
    (``beverages``); an ``amount`` / ``*_amount`` argument stays when it is a finite number
    of at least 0 and becomes None otherwise (``-5000``, ``NaN``, ``"5,000"``). A rule
    condition on a None argument applies (fail closed). Call this on the result of
    ``parse_tool_calls`` before checking rules.

    Args:
        calls: ``parse_tool_calls(agent_output)`` (or one call).

    Returns:
        The calls, ``[{"name", "args"}, ...]``, with those arguments read.
    """
    pending = [calls] if isinstance(calls, dict) else list(calls or [])
    out: list[dict[str, Any]] = []
    for call in pending:
        if not isinstance(call, dict):
            out.append(call)
            continue
        args = call.get("args")
        if isinstance(args, dict):
            read: dict[str, Any] = {}
            for key, value in args.items():
                kind = _kind(str(key))
                if kind == "category":
                    value = place_category(value)
                elif kind == "amount":
                    value = read_amount(value)
                read[key] = value
            call = {**call, "args": read}
        out.append(call)
    return out
