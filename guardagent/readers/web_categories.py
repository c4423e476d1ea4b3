"""World knowledge for deciding which safety category a web task falls under.

The lexicon is written from general knowledge of what web tasks in each category look like
(vehicle makes and models, rental firms, streaming services, lodging types, job vocabulary,
retail phrases, airlines), never from benchmark data. Each entry is a phrase with a weight:

* 3-4: the head noun or a fixed phrase that names the category on its own ("flight", "hotel",
  "add to cart", "rental car");
* 2-2.5: a strong domain term or an unambiguous brand ("sedan", "Netflix", "Marriott");
* 1-1.5: supporting evidence that other categories also use ("nights", "round trip");
* below 1: brand names or words that are also common English ("Enterprise", "Frontier").

Phrases are matched longest-first and consume their tokens, so a compound can redirect a word
("car seat" is a product, "video game" is not video media, "United States" is not an airline).
The `other` pseudo-category holds look-alike tasks that none of the rules cover (trains,
restaurants, parking, order tracking); it competes like the rest and wins when stronger.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

CATEGORIES = ("car", "media", "hotel", "job", "purchase", "flight")
"""The categories a rule can name; everything else is "other"."""

# When scores and first positions tie, more specific categories win over generic shopping.
PRECEDENCE = ("job", "car", "hotel", "flight", "media", "purchase", "other")

NEUTRAL = "none"
"""Phrases that only exist to consume tokens so their parts do not count."""

LEXICON: dict[str, dict[str, float]] = {
    "car": {
        # vehicles and body types
        "car": 3, "truck": 3, "suv": 3, "sedan": 3, "coupe": 2.5, "convertible": 2,
        "minivan": 3, "van": 1.5, "pickup truck": 3.5, "hatchback": 3, "station wagon": 3,
        "wagon": 1, "vehicle": 2.5, "automobile": 3, "auto": 1.5, "electric vehicle": 3,
        "ev": 2, "hybrid": 1, "crossover": 1.5, "4x4": 1.5, "awd": 1.5, "4wd": 1.5,
        "motorcycle": 2, "rv": 2, "camper": 1.5, "cargo van": 3, "moving truck": 3.5,
        "roadster": 2.5, "jeep": 2.5,
        # buying, leasing, renting
        "dealer": 1.5, "dealership": 3, "test drive": 3, "lease": 1.5, "mileage": 2,
        "mpg": 2, "used car": 3.5, "new car": 3.5, "certified pre owned": 3, "cpo": 1.5,
        "trade in": 1.5, "rental car": 3.5, "car rental": 3.5, "rent a car": 3.5,
        "rental": 1, "rent": 0.5, "pick up location": 1.5, "pickup location": 1.5,
        "drop off location": 1.5, "drop off": 0.75, "pickup": 0.5, "pick up": 0.5,
        "road trip": 0.5, "vin": 1.5, "odometer": 2, "horsepower": 2, "msrp": 1.5,
        # makes
        "toyota": 2.5, "honda": 2.5, "ford": 2.5, "chevrolet": 2.5, "chevy": 2.5,
        "nissan": 2.5, "hyundai": 2.5, "kia": 2.5, "bmw": 2.5, "mercedes": 2.5,
        "mercedes benz": 3, "audi": 2.5, "volkswagen": 2.5, "vw": 2, "subaru": 2.5,
        "mazda": 2.5, "tesla": 2.5, "dodge": 2, "gmc": 2.5, "lexus": 2.5, "acura": 2.5,
        "infiniti": 2.5, "volvo": 2.5, "porsche": 2.5, "ferrari": 2.5, "lamborghini": 2.5,
        "cadillac": 2.5, "buick": 2.5, "chrysler": 2.5, "mitsubishi": 2, "land rover": 3,
        "range rover": 3, "fiat": 2, "alfa romeo": 3, "rivian": 2.5, "polestar": 2.5,
        "maserati": 2.5, "bentley": 2.5, "rolls royce": 2.5, "aston martin": 3,
        "mclaren": 2, "bugatti": 2.5, "peugeot": 2.5, "renault": 2.5, "skoda": 2.5,
        "lincoln": 0.75, "jaguar": 0.75, "mini cooper": 3, "genesis": 0.5, "ram": 0.5,
        "lucid": 0.5, "saturn": 0.5, "pontiac": 2.5, "scion": 2,
        # models (only names that are not everyday words carry full weight)
        "corolla": 3, "camry": 3, "rav4": 3, "prius": 3, "tacoma": 2.5, "tundra": 2,
        "highlander": 2, "4runner": 3, "sienna": 2, "civic": 2, "accord": 1,
        "cr v": 3, "hr v": 3, "odyssey": 1.5, "pilot": 0.75, "f 150": 3, "f150": 3,
        "mustang": 2, "bronco": 2.5, "explorer": 1, "escape": 0.5, "ranger": 0.75,
        "silverado": 3, "tahoe": 0.5, "suburban": 1, "malibu": 0.5, "equinox": 1.5,
        "camaro": 3, "corvette": 3, "altima": 3, "sentra": 3, "rogue": 1.5,
        "pathfinder": 2, "elantra": 3, "sonata": 0.5, "tucson": 0.5, "santa fe": 0.5,
        "sorento": 3, "sportage": 3, "telluride": 2, "model 3": 2.5, "model s": 2,
        "model x": 2, "model y": 2.5, "wrangler": 2.5, "grand cherokee": 3, "cherokee": 1,
        "outback": 1.5, "forester": 2, "impreza": 3, "crosstrek": 3, "cx 5": 3, "cx 9": 3,
        "miata": 3, "jetta": 3, "passat": 3, "tiguan": 3, "golf gti": 3, "beetle": 1,
        "leaf": 0.25, "bolt ev": 3, "escalade": 3, "yukon": 1, "sierra": 0.5,
        "charger": 0.5, "challenger": 1, "durango": 2, "grand caravan": 3, "pacifica": 2,
        "x5": 2, "3 series": 3, "5 series": 3, "c class": 3, "e class": 3, "a4": 1.5,
        "q5": 2, "outlander": 2, "frontier": 0.5, "titan": 0.5, "murano": 2, "kicks": 0.25,
        # rental firms and car marketplaces
        "hertz": 3, "avis": 3, "enterprise": 1, "alamo": 2.5, "sixt": 3, "thrifty": 1.5,
        "europcar": 3, "turo": 3, "zipcar": 3, "getaround": 3, "u haul": 3, "uhaul": 3,
        "carmax": 3, "carvana": 3, "autotrader": 3, "auto trader": 3, "cargurus": 3,
        "kelley blue book": 3, "kbb": 3, "edmunds": 2, "truecar": 3, "vroom": 1.5,
    },
    "media": {
        "movie": 3, "film": 3, "cinema": 3, "music": 3, "video": 3, "song": 3,
        "album": 3, "playlist": 3, "soundtrack": 2.5, "tv show": 3.5, "tv series": 3.5,
        "tv": 1.5, "television": 2, "series": 1, "episode": 2, "season": 0.5,
        "documentary": 3, "anime": 2, "cartoon": 2, "trailer": 1.5, "movie trailer": 3.5,
        "showtime": 2.5, "show time": 2.5, "now playing": 2, "box office": 2,
        "stream": 2, "streaming": 2.5, "watch": 1.5, "listen": 2, "podcast": 2,
        "radio": 1.5, "lyric": 2, "singer": 2, "artist": 1.5, "band": 0.75,
        "musician": 2, "rapper": 2, "concert": 1.5, "genre": 1, "actor": 2,
        "actress": 2, "cast": 0.75, "director": 0.75, "comedy": 1.5, "horror": 1.5,
        "thriller": 1.5, "drama": 1.5, "sci fi": 1.5, "romance": 0.5, "animated": 1.5,
        "dvd": 1.5, "blu ray": 1.5, "theater": 1, "theatre": 0.75, "clip": 1,
        "hip hop": 2, "jazz": 2, "rock": 0.5, "pop": 0.5, "classical": 1, "country": 0.25,
        "vinyl": 1, "rent a movie": 4, "movie rental": 4, "music video": 4,
        # streaming services, stores and review sites
        "netflix": 3, "hulu": 3, "spotify": 3, "youtube": 3, "disney plus": 3,
        "hbo": 3, "prime video": 3, "apple music": 3, "apple tv": 3, "pandora": 1,
        "soundcloud": 3, "deezer": 3, "tidal": 1, "vimeo": 3, "twitch": 2, "fandango": 3,
        "imdb": 3, "rotten tomatoes": 3, "redbox": 3, "peacock": 1, "paramount": 1.5,
        "crunchyroll": 3, "shazam": 2, "amc": 1.5, "regal": 1, "billboard": 1,
        "grammy": 2, "oscar": 2, "bandcamp": 3, "iheartradio": 3, "sirius": 2,
    },
    "hotel": {
        "hotel": 3.5, "motel": 3, "inn": 2, "resort": 2.5, "hostel": 3, "lodging": 3,
        "lodge": 2, "accommodation": 3, "vacation rental": 3.5, "holiday rental": 3.5,
        "vacation home": 3, "holiday home": 3, "cabin rental": 3.5, "bed and breakfast": 3.5,
        "bnb": 3, "place to stay": 3, "where to stay": 3, "stay": 1, "staycation": 2,
        "room": 1, "suite": 1.5, "king bed": 2, "queen bed": 1.5, "double room": 2.5,
        "single room": 2.5, "twin room": 2.5, "check in": 0.5, "check in date": 1.5,
        "check out date": 1.5, "night": 1, "guest": 1, "cabin": 1.5, "villa": 2,
        "cottage": 2, "chalet": 2, "condo": 1, "timeshare": 2, "amenity": 1,
        "free breakfast": 1.5, "all inclusive": 1.5, "pet friendly": 0.5,
        "beach house": 2, "rental home": 3, "home rental": 3, "house rental": 3,
        "rental property": 2.5, "lake house": 2, "guesthouse": 2.5, "guest house": 2.5,
        # chains and booking sites
        "airbnb": 3, "vrbo": 3, "booking com": 2, "hotels com": 3, "marriott": 3,
        "hilton": 3, "hyatt": 3, "holiday inn": 3.5, "sheraton": 3, "westin": 3, "ihg": 3,
        "wyndham": 3, "best western": 3.5, "radisson": 3, "four seasons": 2.5, "ritz": 2,
        "la quinta": 3, "days inn": 3.5, "comfort inn": 3.5, "hampton inn": 3.5,
        "red roof": 3, "novotel": 3, "ibis": 3, "motel 6": 3.5, "trivago": 3,
        "choice hotels": 3.5, "accor": 3, "omni": 1, "embassy suites": 3.5,
    },
    "job": {
        "job": 3.5, "career": 3.5, "hiring": 2.5, "hire": 1.5, "apply": 1.5,
        "application": 1, "resume": 2, "cv": 1.5, "cover letter": 3, "internship": 3,
        "intern": 2, "employment": 3, "employer": 1.5, "vacancy": 1.5, "opening": 1,
        "position": 1, "full time": 2, "part time": 2, "remote": 0.5, "salary": 2,
        "recruiter": 2.5, "work from home": 1.5, "entry level": 1.5, "job posting": 4,
        "volunteer": 1, "occupation": 2, "workforce": 1, "hourly": 0.5,
        # occupations seen in job searches
        "engineer": 1, "developer": 1, "nurse": 1, "cashier": 1.5, "barista": 1.5,
        "manager": 0.75, "analyst": 1, "teacher": 1, "accountant": 1, "designer": 0.75,
        "assistant": 0.75, "technician": 1, "driver": 0.5, "warehouse": 0.75,
        "flight attendant": 2.5, "receptionist": 1.5, "clerk": 1, "server": 0.25,
        # job boards
        "linkedin": 2, "glassdoor": 3, "indeed": 0.5, "ziprecruiter": 3,
        "careerbuilder": 3, "simplyhired": 3, "usajobs": 3, "monster com": 3,
    },
    "purchase": {
        # cart and checkout
        "add to cart": 4, "add to bag": 4, "add to basket": 4, "add to my cart": 4,
        "add to shopping cart": 4, "cart": 3, "shopping cart": 3.5, "shopping bag": 3,
        "basket": 2, "checkout": 3, "bag": 1, "buy": 1.5, "purchase": 1.5,
        "order": 1, "shop": 1.5, "shopping": 1.5, "in stock": 2, "free shipping": 2,
        "shipping": 1.5, "delivery": 0.5, "store pickup": 2, "pick up in store": 2.5,
        "in store pickup": 2.5, "coupon": 1, "promo code": 1, "apply coupon": 2,
        "apply promo code": 2, "clearance": 1.5, "wishlist": 1, "gift card": 1.5,
        "quantity": 1, "size": 1, "color": 0.5, "product": 1.5, "item": 1, "sale": 0.5,
        "price": 0.25, "men": 0.75, "women": 0.75, "kid": 0.25,
        # goods
        "shoe": 1.5, "sneaker": 1.5, "boot": 1.5, "sandal": 1.5, "shirt": 1.5,
        "t shirt": 1.5, "tee": 1, "jean": 1.5, "jeans": 1.5, "pant": 1.5, "dress": 1,
        "skirt": 1.5, "jacket": 1.5, "coat": 1, "hoodie": 1.5, "sweater": 1.5, "sock": 1.5,
        "underwear": 1.5, "swimsuit": 1.5, "hat": 1, "glove": 1, "scarf": 1.5,
        "handbag": 1.5, "purse": 1.5, "backpack": 1.5, "wallet": 1, "jewelry": 1.5,
        "necklace": 1.5, "earring": 1.5, "bracelet": 1.5, "sunglasses": 1.5,
        "laptop": 1.5, "computer": 1, "monitor": 1, "keyboard": 1, "headphone": 1.5,
        "earbud": 1.5, "speaker": 0.75, "phone": 1, "iphone": 1.5, "smartphone": 1.5,
        "tablet": 1.5, "ipad": 1.5, "charger": 1, "printer": 1.5, "camera": 1,
        "smart watch": 2, "smartwatch": 2, "apple watch": 2, "console": 1,
        "video game": 1.5, "toy": 1.5, "lego": 1.5, "doll": 1.5, "board game": 1.5,
        "furniture": 1.5, "sofa": 1.5, "couch": 1.5, "chair": 1, "desk": 1,
        "mattress": 1.5, "pillow": 1, "blanket": 1, "lamp": 1, "rug": 1, "curtain": 1,
        "living room": 1, "cookware": 1.5, "blender": 1.5, "coffee maker": 1.5,
        "microwave": 1.5, "refrigerator": 1.5, "vacuum": 1.5, "appliance": 1.5,
        "grocery": 1.5, "snack": 1, "vitamin": 1.5, "supplement": 1, "shampoo": 1.5,
        "lotion": 1.5, "makeup": 1.5, "lipstick": 1.5, "perfume": 1.5, "fragrance": 1.5,
        "skincare": 1.5, "diaper": 1.5, "stroller": 1.5, "car seat": 3, "tire": 2,
        "auto part": 3, "car part": 3, "car accessory": 3, "car charger": 3,
        "car cover": 3, "car mount": 3, "brake pad": 2.5, "wiper blade": 2.5,
        "motor oil": 2.5, "battery": 0.75, "drill": 1, "lawn mower": 1.5, "grill": 1,
        "tent": 1, "bicycle": 1, "bike": 0.75, "helmet": 1, "yoga mat": 1.5,
        "dumbbell": 1.5, "treadmill": 1.5, "pet food": 1.5, "dog food": 1.5,
        "cat food": 1.5, "smart tv": 3, "tv stand": 3, "tv mount": 3, "4k tv": 3,
        "oled tv": 3, "inch tv": 3, "inch": 0.75, "pack of": 1, "ebook": 1, "kindle": 1,
        # retailers
        "amazon": 2, "ebay": 2.5, "walmart": 2.5, "target": 0.75, "best buy": 3,
        "costco": 2.5, "home depot": 3, "lowe": 1.5, "ikea": 3, "etsy": 3, "macy": 3,
        "nordstrom": 3, "kohl": 2, "sephora": 3, "ulta": 3, "nike": 2, "adidas": 2,
        "zappos": 3, "wayfair": 3, "newegg": 3, "gamestop": 3, "kroger": 2.5,
        "walgreens": 1.5, "cvs": 1, "h m": 2, "zara": 2.5, "uniqlo": 3, "old navy": 3,
        "j crew": 3, "rei": 1.5, "instacart": 3, "aliexpress": 3, "shein": 3, "temu": 3,
        "sam club": 3, "overstock": 3, "chewy": 2.5, "petco": 2.5, "petsmart": 2.5,
    },
    "flight": {
        "flight": 3.5, "airline": 3, "airfare": 3, "plane ticket": 3.5, "air ticket": 3.5,
        "fly": 2, "flying": 2, "airport": 1, "one way": 1, "round trip": 1.5,
        "roundtrip": 1.5, "nonstop": 2, "non stop": 2, "layover": 2, "stopover": 1.5,
        "economy class": 2, "business class": 2, "first class": 1.5,
        "premium economy": 2.5, "basic economy": 2.5, "cabin class": 2.5,
        "departure": 1, "depart": 1, "departing": 1, "arrival": 0.5, "boarding": 1.5,
        "boarding pass": 3, "baggage": 1.5, "carry on": 1.5, "checked bag": 2.5,
        "seat selection": 1.5, "frequent flyer": 2.5, "mile": 0.25, "passenger": 1,
        "red eye": 2, "online check in": 2.5, "flight status": 4, "jet": 1,
        # airlines and flight search sites
        "delta": 2, "united airline": 3.5, "american airline": 3.5, "southwest": 1.5,
        "jetblue": 3, "alaska airline": 3.5, "spirit airline": 3.5, "frontier airline": 3.5,
        "allegiant": 3, "hawaiian airline": 3.5, "air canada": 3, "british airway": 3,
        "lufthansa": 3, "emirates": 2, "qatar airway": 3, "air france": 3, "klm": 3,
        "ryanair": 3, "easyjet": 3, "singapore airline": 3.5, "cathay pacific": 3,
        "qantas": 3, "turkish airline": 3.5, "etihad": 3, "aeromexico": 3,
        "virgin atlantic": 3, "sun country": 2, "volaris": 3, "iberia": 2, "aer lingus": 3,
        "skyscanner": 3, "google flight": 3.5, "kayak": 0.5, "expedia": 0.75,
        "priceline": 0.5, "orbitz": 0.75, "hopper": 1, "cheapoair": 3, "momondo": 2,
    },
    "other": {
        "restaurant": 3, "dining": 2, "table for": 2, "menu": 1.5, "recipe": 3,
        "train": 3, "amtrak": 3, "rail": 2, "railway": 2, "bus": 3, "greyhound": 3,
        "ferry": 3, "cruise": 3, "subway": 2, "metro": 1.5, "taxi": 2, "uber": 1.5,
        "lyft": 1.5, "ride share": 2, "parking": 3, "car park": 3, "airport parking": 3.5,
        "airport shuttle": 3.5, "airport transfer": 3.5, "weather": 3, "forecast": 2,
        "news": 2, "article": 1, "sport": 1.5, "score": 1, "standing": 1, "nba": 2,
        "nfl": 2, "mlb": 2, "nhl": 2, "stadium": 1, "ticket": 0.75, "event": 1,
        "museum": 2, "tour": 1, "things to do": 2, "attraction": 1.5, "theme park": 2,
        "zoo": 2, "broadway": 1.5, "musical": 1, "real estate": 3, "apartment": 2, "for rent": 1.5,
        "house for sale": 3, "home for sale": 3, "mortgage": 3, "insurance": 2,
        "car insurance": 4, "auto insurance": 4, "loan": 2, "car loan": 3.5, "bank": 2,
        "credit card": 2, "doctor": 2, "appointment": 1.5, "pharmacy": 1,
        "prescription": 1.5, "store locator": 3, "store hour": 3, "find a store": 2,
        "nearest store": 2, "track order": 3.5, "track my order": 3.5, "order status": 3.5,
        "status of my order": 3.5, "track": 1, "tracking": 1.5, "status": 1,
        "return policy": 2.5, "refund": 2, "customer service": 2, "contact us": 2,
        "sign up": 1, "newsletter": 2, "login": 1, "log in": 1, "gift card balance": 4,
        "car wash": 4, "car repair": 4, "auto repair": 4, "repair": 1.5, "oil change": 3,
        "mechanic": 2, "maintenance": 1, "game": 1, "library": 2,
    },
    NEUTRAL: {
        "united state": 0, "united kingdom": 0, "united arab emirate": 0,
        "apply filter": 0, "check out": 0, "sort by": 0, "show me": 0, "show all": 0,
    },
}

LOCATIVES = frozenset({"near", "nearby", "around", "at", "beside", "outside", "close", "next"})
"""Words after which a matched term describes a place, not the thing the task acts on."""
LOCATIVE_WINDOW = 5
LOCATIVE_FACTOR = 0.4

ELEMENT_FACTOR = 0.4
"""How much the chosen element's text counts relative to the task (it is page/agent text)."""
ELEMENT_CAP = 3.0
MIN_SCORE = 1.0
"""Below this much evidence the task is "other": a guard should not invent a category."""

_POSSESSIVE = re.compile(r"['\u2019]s\b")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def tokenize(text: str) -> list[str]:
    """Lowercase word tokens; possessives dropped, punctuation and hyphens split words."""
    lowered = _POSSESSIVE.sub("", text.lower())
    return [t for t in _NON_ALNUM.split(lowered) if t]


def forms(token: str) -> frozenset[str]:
    """The token and its plausible singulars, so "movies", "cities" and "buses" all match."""
    out = {token}
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        out.add(token[:-1])
        if token.endswith("es") and len(token) > 4:
            out.add(token[:-2])
        if token.endswith("ies") and len(token) > 4:
            out.add(token[:-3] + "y")
    return frozenset(out)


@dataclass(frozen=True)
class Term:
    """One lexicon phrase, tokenized the same way as the text it is matched against."""

    category: str
    phrase: str
    tokens: tuple[str, ...]
    weight: float


@dataclass
class Evidence:
    """Per-category scores and where each category was first seen (for tie-breaking)."""

    scores: dict[str, float] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)
    terms: list[tuple[str, str, float]] = field(default_factory=list)


def _build_index() -> dict[str, list[Term]]:
    index: dict[str, list[Term]] = {}
    for category, entries in LEXICON.items():
        for phrase, weight in entries.items():
            tokens = tuple(tokenize(phrase))
            index.setdefault(tokens[0], []).append(Term(category, phrase, tokens, weight))
    for terms in index.values():
        terms.sort(key=lambda t: -len(t.tokens))
    return index


_INDEX = _build_index()


def _longest_match(tokens: list[frozenset[str]], i: int) -> Term | None:
    # Different surface forms can start different phrases; keep the longest overall.
    best: Term | None = None
    for first in tokens[i]:
        for term in _INDEX.get(first, ()):
            n = len(term.tokens)
            if i + n <= len(tokens) and all(
                term.tokens[k] in tokens[i + k] for k in range(1, n)
            ) and (best is None or n > len(best.tokens)):
                best = term
    return best


def collect(text: str, *, factor: float = 1.0, cap: float | None = None) -> Evidence:
    """Score `text` against the lexicon; each distinct phrase counts once.

    Terms that follow a locative word ("near the airport", "at the hotel") are discounted:
    they name where the action happens, not what it acts on.
    """
    words = tokenize(text)
    tokens = [forms(w) for w in words]
    ev = Evidence()
    seen: set[tuple[str, str]] = set()
    last_locative = -LOCATIVE_WINDOW - 1
    i = 0
    while i < len(tokens):
        if words[i] in LOCATIVES:
            last_locative = i
        term = _longest_match(tokens, i)
        if term is None:
            i += 1
            continue
        key = (term.category, term.phrase)
        if term.category != NEUTRAL and key not in seen:
            seen.add(key)
            weight = term.weight * factor
            if i - last_locative <= LOCATIVE_WINDOW:
                weight *= LOCATIVE_FACTOR
            ev.scores[term.category] = ev.scores.get(term.category, 0.0) + weight
            ev.first.setdefault(term.category, i)
            ev.terms.append((term.category, term.phrase, weight))
        i += len(term.tokens)
    if cap is not None:
        ev.scores = {c: min(s, cap * factor) for c, s in ev.scores.items()}
    return ev


def categorize(task: str, element_texts: Iterable[str] = ()) -> tuple[str, Evidence]:
    """The category of a task, with the evidence; element texts are secondary evidence.

    Precedence: highest score; then the category mentioned first in the task (the head of
    the request usually comes first: "hotel near the airport"); then `PRECEDENCE`.
    """
    ev = collect(task)
    extra = collect(" ".join(element_texts), factor=ELEMENT_FACTOR, cap=ELEMENT_CAP)
    for category, score in extra.scores.items():
        ev.scores[category] = ev.scores.get(category, 0.0) + score
        ev.terms.extend(t for t in extra.terms if t[0] == category)
    if not ev.scores:
        return "other", ev
    big = len(tokenize(task)) + 1

    def rank(category: str) -> tuple[float, int, int]:
        return (
            round(ev.scores[category], 6),
            -ev.first.get(category, big),
            -PRECEDENCE.index(category),
        )

    best = max(ev.scores, key=rank)
    if best == "other" or ev.scores[best] < MIN_SCORE:
        return "other", ev
    return best, ev
