r"""The URLs a URL carries: where a redirector on a trusted site may send the browser.

``https://trusted.example/redirect?url=https://evil.example`` opens ``trusted.example``, which
answers with a redirect to ``evil.example`` (an open redirect; ``www.google.com/url?q=`` is
one). A navigation scope that admits the host admits the redirect too, unless the URL is
also judged by what it carries. :func:`carried` finds those targets, the way a redirector
reads them:

- the query and the fragment are split into names and values (``&``, ``=``, ``;``, ``?``,
  ``#``), each read form-decoded (``+`` a space, percent escapes) and again up to
  :data:`MAX_DECODINGS` times (``https%253A%252F%252F`` is ``https://``); a decoded piece
  is split again (``%26`` and ``%3D`` separate too);
- the path's parameters (after ``;``: matrix variables) are split and read the same way;
- a piece is a target when, after dropping what the URL Standard drops (tabs and newlines
  anywhere, C0 controls and spaces around; a piece outside ASCII is also read NFKC with
  Unicode spaces stripped), it resolves to a path of two slashes (``/.//evil.example``),
  or starts with two slashes or backslashes
  (``//evil.example``, ``/\evil.example``: a browser resolves it against the redirector's
  scheme), starts with a scheme the guard reads (``https:evil.example`` is
  ``https://evil.example``), or is a bare host a link reader places (``www.evil.example``,
  ``evil.com/login``: a known public suffix, ``www.``, ``localhost`` or an IP). Parsed by
  the WHATWG parser (``ada-url``);
- the path is read too: a segment from which a scheme and ``:/`` start
  (``/out/https://evil.example``, also percent-encoded) carries the rest of the path, and
  a path that starts with two slashes or backslashes (``//evil.example/``, ``/%5Cevil``)
  carries itself (a server that normalises the path answers ``Location: //evil.example/``);
- a path segment that opens with a special scheme and no slash (``/out/https:evil.example``)
  carries the rest of the path, as the URL parser reads ``https:evil.example``;
- a piece holding a URL in base64 (``?r=aHR0cHM6Ly9...``, at any alignment, standard or
  URL-safe) is an unreadable target: the query is read case-folded, base64 is not;
- a piece that is a ``javascript:``, ``vbscript:`` or ``data:`` URL is an unreadable
  target (a client-side redirector that assigns it runs it in the trusted page);
- a piece with ``://`` after another scheme (``foo://evil.example``), or that should be a
  target and does not parse, is an unreadable target (None): never inside a scope;
- a well-known redirector that writes its target otherwise (Google AMP's
  ``/amp/s/evil.example``, URL Defense, a link shortener) is read by its entry in
  :data:`~guardagent.trace.found.redirectors.REDIRECTORS`;
- a piece written as a path of the same site (``?next=/settings/payment``) is no target
  (the site is the same), but :func:`same_site` reads it for a rule that forbids a path.

The caller judges each target by the same scopes (a target carrying another is judged in
turn, up to :data:`MAX_DEPTH` levels; deeper is outside). Linear: each level splits and
decodes the text a bounded number of times, and a URL carrying more than
:data:`MAX_TARGETS` targets is unreadable (so the targets judged in turn are bounded too).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from urllib.parse import unquote_plus

from guardagent.trace.found.redirectors import MAX_DECODINGS, known_targets, percent_decoded
from guardagent.trace.found.urls import SCHEMES, parse_url, read_url
from guardagent.trace.text.kinds import Location, Value
from guardagent.trace.text.normal import reading_form

MAX_DEPTH = 4
"""Levels of targets carried inside targets that are judged; a deeper one is outside."""
MAX_TARGETS = 32
"""Targets one URL may carry; more is unreadable (a scope never admits it)."""

UNSETTLED = "\x00"
"""A piece still percent-encoded after MAX_DECODINGS decodings: an unreadable target."""
_SEPARATORS = str.maketrans({c: "&" for c in "=;?#"})
_DROPPED = str.maketrans({"\t": None, "\n": None, "\r": None})
_C0_AND_SPACE = "".join(map(chr, range(0x21)))
_SCRIPTS = frozenset({"javascript", "vbscript", "data"})
"""Schemes whose URL is a script or a document made by the URL, not a place to go."""


def _in_base64(literal: bytes) -> list[str]:
    """The base64 characters `literal` alone decides, at each of the three byte alignments.

    ``https://`` at any offset of base64 text shows as one of three runs (``aHR0cHM6Ly``,
    ``h0dHBzOi8v``, ``odHRwczovL``), whatever comes before or after it; case-folded, as the
    guard reads a URL's query.
    """
    import base64

    out = []
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + literal + bytes(3)).decode()
        first, last = 8 * offset, 8 * (offset + len(literal))
        out.append(
            "".join(c for j, c in enumerate(encoded) if first <= 6 * j and 6 * j + 6 <= last)
        )
    return [n.casefold() for n in out]


_URL_IN_BASE64 = tuple(n for lit in (b"https://", b"http://") for n in _in_base64(lit))
"""What a URL written in base64 (standard or URL-safe) holds, however it is aligned."""


def carried(where: Location) -> list[Value | None]:
    """The targets a URL carries (None: one that does not read), in its path, query, fragment.

    Args:
        where: The URL as the browser reads it (:class:`~guardagent.trace.text.kinds.Location`).
    """
    return list(_carried(where))


@lru_cache(maxsize=2_048)
def _carried(where: Location) -> tuple[Value | None, ...]:
    """:func:`carried`, kept (bounded).

    Safe to keep: a pure function of the URL's reading, so a kept answer is what reading
    again gives, and it holds no thread's or tenant's facts.
    """
    base = f"https://{where.host}/"
    found: list[Value | None] = []
    params = where.path.partition(";")[2]  # path parameters (matrix variables) too
    for text in (where.query, where.fragment, params):
        for piece in _pieces(text):
            _judge(piece, base, found)
    _path_targets(where.path, found)
    found.extend(
        None if t is None else parse_url(reading_form(t), False) for t in known_targets(where)
    )
    if len(found) > MAX_TARGETS:
        return (None,)
    return tuple(found)


def every_carried(where: Location) -> list[Value | None]:
    """Every target a URL carries, and theirs in turn, as a scope judges them (flat, deduplicated).

    Targets are followed :data:`MAX_DEPTH` levels deep; a target at the last level that
    carries another, or more than :data:`MAX_TARGETS` targets in all, adds None (unreadable):
    the same bounds :func:`~guardagent.trace.sources.temporal.scope_verdict` keeps.
    """
    out: list[Value | None] = []
    seen: set[Location | None] = set()
    todo = [(t, 1) for t in carried(where)]
    while todo:
        target, depth = todo.pop()
        place = None if target is None else target.where
        if place in seen:
            continue
        seen.add(place)
        out.append(target)
        if len(out) > MAX_TARGETS:
            return out + [None]
        inner = carried(place) if place is not None else []
        if inner and depth >= MAX_DEPTH:
            out.append(None)
        elif inner:
            todo.extend((t, depth + 1) for t in inner)
    return out


def every_landing(where: Location) -> list[Value | None]:
    """Every page a URL may send the browser on to (None: one that cannot be read).

    The URLs it carries at any depth (:func:`every_carried`), and the pages of its own site,
    and of each URL it carries, that it names as paths (:func:`same_site`).
    """
    targets = every_carried(where)
    places = [where, *(t.where for t in targets if t is not None and t.where is not None)]
    return targets + [page for place in places for page in same_site(place)]


def same_site(where: Location) -> list[Value]:
    """The pages of the URL's own site that its pieces name as paths (``?next=/settings``).

    A redirector sends the browser to a path of its own site as readily as to another
    site. Such a target stays inside a scope that admits the site, so :func:`carried`
    leaves it out, but a rule that forbids a path of that site must see it
    (:func:`~guardagent.trace.sources.temporal.scope_verdict`). A piece written as a path (``/x``,
    ``./x``, ``../x``; after the decoding :func:`carried` does) is resolved against the URL.
    """
    return list(_same_site(where))


@lru_cache(maxsize=2_048)
def _same_site(where: Location) -> tuple[Value, ...]:
    """:func:`same_site`, kept (a pure function of the URL's reading, as :func:`_carried`)."""
    import ada_url

    authority = where.host if where.port is None else f"{where.host}:{where.port}"
    base = f"https://{authority}{where.path or '/'}"
    out: dict[Value, None] = {}
    for text in (where.query, where.fragment, where.path.partition(";")[2]):
        for piece in _pieces(text):
            path = piece.translate(_DROPPED).strip(_C0_AND_SPACE)
            if not (path.startswith(("./", "../")) or (path[:1] == "/" and path[1:2] not in "/\\")):
                continue
            try:
                href = ada_url.URL(path, base=base).href
            except ValueError:
                continue
            value = parse_url(reading_form(href), False)
            if value is not None:
                out[value] = None
    return tuple(out)


def _pieces(text: str) -> list[str]:
    """Names and values of a query or fragment, each decoded up to MAX_DECODINGS times.

    Every piece is kept, however many (stopping early would leave a target after many plain
    parameters unjudged): each level re-splits only pieces that decoded to something else,
    so the work is at most MAX_DECODINGS + 1 passes over the text.
    """
    out: list[str] = []
    todo = [(text, 0)]
    while todo:
        chunk, level = todo.pop()
        for piece in chunk.translate(_SEPARATORS).split("&"):
            if not piece:
                continue
            decoded = unquote_plus(piece)
            if decoded == piece:
                out.append(piece)
            elif level < MAX_DECODINGS:
                todo.append((decoded, level + 1))  # split again: %26 and %3D separate too
                out.append(decoded)  # and read whole (a URL with its own query)
            else:
                out.append(UNSETTLED)  # still encoded after MAX_DECODINGS: unreadable
    return out


def _judge(piece: str, base: str, found: list[Value | None]) -> None:
    """Append the target a piece is, if it is one (None when it should be and does not read).

    A piece with characters outside ASCII is also read NFKC and stripped of Unicode spaces
    (a redirector in Python strips ``\u3000``; one that normalises reads ``／／`` as ``//``).
    """
    if piece == UNSETTLED:
        found.append(None)
        return
    text = piece.translate(_DROPPED).strip(_C0_AND_SPACE)
    readings = [text]
    if not text.isascii():
        folded = unicodedata.normalize("NFKC", text).strip()
        if folded != text:
            readings.append(folded)
    mine: list[Value | None] = []
    for reading in readings:
        _judge_text(reading, base, mine)
    found.extend(v for i, v in enumerate(mine) if v not in mine[:i])  # one piece: 2 at most


def _judge_text(text: str, base: str, found: list[Value | None]) -> None:
    """:func:`_judge` of one reading of a piece."""
    import ada_url

    if not text:
        return
    if any(n in text.casefold() for n in _URL_IN_BASE64):
        # a URL in base64 (``?r=aHR0cHM6Ly9...``): the guard reads the query case-folded,
        # which base64 is not, so the target cannot be read: never inside a scope
        found.append(None)
        return
    if text[:1] in "/\\.":  # relative: read against the redirector's scheme and host
        try:
            url = ada_url.URL(text, base=base)
        except ValueError:
            found.append(None)
            return
        # //evil.example and /\evil.example name a host; /.//evil.example resolves to a
        # path of two slashes, which a server that normalises the path answers as one
        if (text[:1] != "." and text[1:2] in ("/", "\\")) or url.pathname.startswith("//"):
            found.append(parse_url(reading_form(url.href), False))
            return
    colon = text.find(":")
    scheme = text[:colon].lower() if colon > 0 else ""
    if scheme in SCHEMES:
        found.append(parse_url(reading_form(text), False))
    elif scheme in _SCRIPTS:
        found.append(None)  # runs in the trusted page (a client-side redirector assigns it)
    elif "://" in text:
        found.append(None)  # an authority under a scheme the guard does not read
    elif colon < 0 and " " not in text:
        bare = read_url(reading_form(text), True)
        if bare is not None:
            found.append(bare)


_SCHEME_SEGMENT = re.compile(r"/((?:https?|wss?|ftp):(?![/\\]))")
"""A path segment that opens with a special scheme and no slash: ``https:evil.example`` is
``https://evil.example`` to the URL parser (from a page of another scheme, as a Location)."""


def _path_targets(path: str, found: list[Value | None]) -> None:
    """A URL written into the path (``/out/https://evil.example``), decoded as servers do."""
    path = percent_decoded(path).replace("\\", "/")
    if path.startswith("//"):  # a server normalising the path answers Location: //host/...
        found.append(parse_url(reading_form("https:" + path), False))
    for segment in _SCHEME_SEGMENT.finditer(path):  # /out/https:evil.example: no slashes
        found.append(parse_url(reading_form(path[segment.start(1) :]), False))
    at = path.find(":/")
    while at >= 0 and len(found) <= MAX_TARGETS:
        start = path.rfind("/", 0, at) + 1
        scheme = path[start:at]
        if scheme in SCHEMES:
            found.append(parse_url(reading_form(path[start:]), False))
        elif scheme.isalpha() and path.startswith("//", at + 1):
            found.append(None)
        at = path.find(":/", at + 2)
