r"""URLs as browsers read them: WHATWG parsing (ada-url), IDNA hosts, registrable domains.

A URL value's key is what a browser would open: ``url:host[:port]/path[?query]``. The host
comes from the WHATWG URL Standard parser (``ada-url``), so ``https://evil.io\@example.com/``
is ``evil.io`` (a backslash ends the authority), and through its IDNA UTS-46
non-transitional processing (``straße.ch`` is ``xn--strae-oqa.ch``, never ``strasse.ch``).
A ``www.`` prefix, the scheme's default port, a fragment that is only an anchor
(``#section-2``; a route, parameters or a URL in it count) and trailing slashes are dropped
from the key, and the path is percent-decoded and case-folded (re-spellings of one page
meet); in the query only escapes of unreserved characters are decoded (RFC 3986). The
fragment and the query stay in :class:`~guardagent.trace.text.kinds.Location` for
scope rules.

Parts: ``host:<host>`` and ``domain:<registrable domain>`` (the Public Suffix List with its
private section, from ``tldextract``'s bundled snapshot, never fetched: ``alice.github.io``
and ``attacker.github.io`` are two domains). An IP literal, ``localhost`` or a name under no
known suffix is its own registrable domain.

Text without a scheme is a URL when it starts with ``www.``, is ``localhost`` or an IP
literal, or its host ends in a known public suffix. A token shaped like a link that none of
this places (an unknown top-level label, a link glued to the next sentence) is *unplaced*:
kept as a value found only where the same token is written (see
:func:`~guardagent.trace.text.kinds.unplaced`).
"""

from __future__ import annotations

import re
import string
from functools import cache, lru_cache
from typing import TYPE_CHECKING
from urllib.parse import unquote

from guardagent.trace.text.kinds import Location, Value, unplaced
from guardagent.trace.text.normal import reading_form, tokens

if TYPE_CHECKING:
    import tldextract

SCHEMES = frozenset({"http", "https", "ftp", "ws", "wss"})
"""Schemes read as URLs (the WHATWG special schemes with a host)."""
_CLOSERS = {")": "(", "]": "[", "}": "{"}
_TRAILING = frozenset(".,;:!?'\"") | frozenset(_CLOSERS)
_IP_HOSTS = (1, 2)  # ada's HostType.IPV4, HostType.IPV6
_ESCAPE = re.compile(r"%([0-9a-fA-F]{2})")  # fixed width: linear
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_PLAIN_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)+")  # dots separate the runs: linear


@cache
def _tld() -> tldextract.TLDExtract:
    import tldextract

    # The bundled public-suffix snapshot only: no fetch, no cache written to disk.
    return tldextract.TLDExtract(
        suffix_list_urls=(),
        cache_dir=None,
        fallback_to_snapshot=True,
        include_psl_private_domains=True,
    )


def trim(candidate: str) -> str:
    """A candidate without trailing punctuation (a closing bracket stays when it is paired)."""
    opened = {o: candidate.count(o) for o in _CLOSERS.values()}
    closed = {c: candidate.count(c) for c in _CLOSERS}
    end = len(candidate)
    while end and candidate[end - 1] in _TRAILING:
        c = candidate[end - 1]
        if c in _CLOSERS and closed[c] <= opened[_CLOSERS[c]]:
            break
        if c in closed:
            closed[c] -= 1
        end -= 1
    return candidate[:end]


def registrable(host: str, ip: bool = False) -> str | None:
    """The registrable domain of an ASCII host (private PSL section included), or None.

    None for an IP literal or a host under no known public suffix.
    """
    if ip:
        return None
    ext = _tld()(host)
    return f"{ext.domain}.{ext.suffix}" if ext.suffix and ext.domain else None


@cache
def _top_labels() -> frozenset[str] | None:
    """The last label of every public suffix (private too); None under a root wildcard."""
    labels = frozenset(suffix.rsplit(".", 1)[-1] for suffix in _tld().tlds)
    return None if "*" in labels else labels


def unplaceable(candidate: str) -> bool:
    """A bare candidate that :func:`read_url` certainly does not place, told without parsing.

    Only for the plainest spelling: a host of lower-case ASCII labels (letters, digits,
    ``-``, ``_``), then at most a port, path, query or fragment. Such a host is what the
    browser's parser keeps (UTS-46 maps none of those characters). Its last label decides:
    all digits, the URL Standard reads the host as an IPv4 address or fails, and a bare
    candidate that is no dotted quad is not placed; letters under no public suffix (the
    suffix list's top labels; ``xn--`` labels excepted), the host has no registrable
    domain, and a bare candidate that is not ``localhost`` or ``www.`` is not placed. Any
    other spelling answers False (parse it).
    """
    end = len(candidate)
    for stop in "/?#\\:":
        at = candidate.find(stop)
        if 0 <= at < end:
            end = at
    host = candidate[:end]
    if _PLAIN_HOST.fullmatch(host) is None or host.startswith("www."):
        return False
    last = host.rsplit(".", 1)[1]
    if last.isdigit():
        return not _dotted_quad(candidate)
    top = _top_labels()
    return last.isalpha() and not last.startswith("xn--") and top is not None and last not in top


@lru_cache(maxsize=4096)
def read_url(candidate: str, bare: bool) -> Value | None:
    """The URL a candidate is (`bare`: written without a scheme), or None if not placed.

    Args:
        candidate: Text in reading form (:func:`~guardagent.trace.text.normal.reading_form`),
            trailing punctuation already trimmed.
        bare: No scheme was written: ``http://`` is assumed, and the host must be placed
            (a known public suffix, ``www.``, ``localhost`` or an IP literal).
    """
    if not candidate or (bare and unplaceable(candidate)):
        return None
    return parse_url(candidate, bare)


def parse_url(candidate: str, bare: bool) -> Value | None:
    """:func:`read_url` without its shortcut (:func:`unplaceable`): always parsed."""
    import ada_url

    if not candidate:
        return None
    try:
        url = ada_url.URL("http://" + candidate if bare else candidate)
    except ValueError:
        return None
    scheme = url.protocol.rstrip(":")
    host = url.hostname.rstrip(".")
    if scheme not in SCHEMES or not host:
        return None
    host = host.removeprefix("www.")
    ip = int(url.host_type) in _IP_HOSTS
    if bare and ip and not _dotted_quad(candidate):
        return None  # "3.14" is a number, not the WHATWG shorthand for 3.0.0.14
    domain = registrable(host, ip)
    if bare and domain is None and not (ip or host == "localhost" or candidate.startswith("www.")):
        return None
    port = int(url.port) if url.port else None
    path = unquote(url.pathname).casefold().rstrip("/")
    query = _unreserved(url.search.removeprefix("?"))
    fragment = url.hash.removeprefix("#")
    where = Location(host, port, path, query, fragment, served_path(path))
    authority = host if port is None else f"{host}:{port}"
    key = f"url:{authority}{path}" + (f"?{query}" if query else "")
    if fragment and not _anchor(fragment):
        key += "#" + _unreserved(fragment)
    return Value(
        "url",
        (key,),
        candidate,
        tuple(tokens(candidate)),
        parts=(("host", f"host:{host}"), ("domain", f"domain:{domain or host}")),
        where=where,
    )


UNSETTLED = "\x00"
"""The served reading of a path still percent-encoded after three decodings: it matches no
scope path, so a scope rule over it is open or fails, never holds."""


def served_path(path: str) -> str:
    """A decoded path as a web server may resolve it, for scope rules.

    Servers differ from the browser after it sends the path: nginx decodes ``%2F`` and
    merges ``//``, Java servers drop ``;parameters`` from segments, some decode twice
    (``%252e`` is ``.``), IIS reads a decoded ``%5C`` (a backslash) as ``/``, and every one
    resolves ``..`` after decoding. This reading does
    all of it (and reads the decoded characters as the rest of the text is read, NFKC and
    case folding), so ``/catalog/..%2f..%2fsettings//pay;x/ment`` is ``/settings/pay/ment``.
    No trailing ``/``. A path still encoded after three decodings is :data:`UNSETTLED`.

    Args:
        path: The path of :func:`read_url` (percent-decoded, case-folded).
    """
    for _ in range(2):  # decoded once already; servers that decode again (%252e is .)
        if "%" not in path or (decoded := unquote(path)) == path:
            break
        path = decoded
    else:
        if "%" in path and unquote(path) != path:
            return UNSETTLED  # still encoded after three decodings: no scope holds it
    segments: list[str] = []
    for segment in reading_form(path).replace("\\", "/").split("/"):
        segment = segment.split(";", 1)[0]
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    return "".join("/" + s for s in segments)


def _unreserved(text: str) -> str:
    """Percent-escapes of unreserved characters decoded (RFC 3986 6.2.2.2: the same URI)."""
    if "%" not in text:
        return text
    return _ESCAPE.sub(
        lambda m: c if (c := chr(int(m.group(1), 16))) in _UNRESERVED else m.group(0).upper(), text
    )


def _anchor(fragment: str) -> bool:
    """Whether a fragment is only a place in the page (``#section-2``), not state a script reads.

    A page's scripts read the rest of the fragment: a route (``#/settings/forwarding``,
    ``#!/admin``), parameters (``#access_token=...``) or a target a client-side redirector
    opens (``#https://evil.example``, ``#www.evil.example``). Only letters, digits and
    ``-_.~`` (percent-decoded), and no host a link reader places, make an anchor.
    """
    decoded = unquote(fragment)
    if not all(c.isalnum() or c in "-_.~" for c in decoded):
        return False
    return "." not in decoded or read_url(reading_form(decoded), True) is None


def _dotted_quad(candidate: str) -> bool:
    head = candidate
    for stop in "/?#:":
        head = head.split(stop, 1)[0]
    parts = head.split(".")
    return len(parts) == 4 and all(p.isdigit() and p.isascii() and int(p) <= 255 for p in parts)


def link_like(candidate: str) -> bool:
    """Whether a token is shaped like a link: a scheme, or dotted labels ending in letters."""
    if "://" in candidate:
        return True
    head = candidate
    for stop in "/?#:":
        head = head.split(stop, 1)[0]
    labels = head.split(".")
    if len(labels) < 2 or not all(labels):
        return False
    last = labels[-1]
    return len(last) >= 2 and last.isalpha()


def read_link(candidate: str, bare: bool) -> Value | None:
    """A located link: the URL it is, an unplaced value if only link-shaped, else None."""
    text = trim(candidate)
    value = read_url(text, bare)
    if value is not None:
        return value
    if text and link_like(text):
        return unplaced("url", text, tuple(tokens(text)))
    return None
