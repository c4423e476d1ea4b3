r"""Well-known redirectors: sites that carry their target where no query piece holds it.

:mod:`guardagent.trace.found.redirects` reads a target any redirector writes as a URL (in the
query, the fragment, or the path after a scheme). Some well-known ones write it otherwise,
and a rule that allows their site would let the browser go on unjudged:

- Google's AMP viewer, ``google.<suffix>/amp/s/evil.example/login`` (``s``: https; without
  it, http), and the AMP cache, ``<name>.cdn.ampproject.org/c/s/evil.example/`` (``c``,
  ``v``, ``i``, ``r``, ``wp``, ``ii``): the host follows the prefix, with no scheme;
- Proofpoint URL Defense v3, ``urldefense.com/v3/__https://evil.example/x__;!!...``: the
  URL between ``__`` and ``__;`` (its query lands in the outer query), and v2,
  ``urldefense.proofpoint.com/v2/url?u=https-3A__evil.example_x``: ``-XX`` a byte, ``_``
  a ``/``;
- Google's ``/url?q=`` (or ``url=``), Facebook's and Instagram's link shims, YouTube's,
  Slack's and Reddit's redirects and Outlook Safe Links with a target written without a
  scheme (``q=evil-phish.example/login``): read as ``http://`` and the value, whatever its
  suffix (a bare host in any other query is a target only when a link reader places it);
- Bing's click tracker, ``bing.com/ck/a?...&u=a1<base64url of the URL>``, and link
  shorteners (``t.co``, ``bit.ly``, ``lnkd.in``...): a target that cannot be read (the
  guard reads URLs case-folded, base64 is not; the shortener keeps its target).

:data:`REDIRECTORS` is the table: which hosts, and how the target is read. A target that
should be there and does not decode or parse is unreadable (None), never inside a scope.
The path is read decoded up to :data:`MAX_DECODINGS` times, as
:func:`~guardagent.trace.found.redirects.carried` reads a path, and as the server resolves it
(:attr:`~guardagent.trace.text.kinds.Location.served`). Linear: each reader splits or decodes
the URL a bounded number of times.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

from guardagent.trace.found.urls import SCHEMES, registrable
from guardagent.trace.text.kinds import Location

Target = str | None
"""A target URL as the redirector writes it out, or None when it cannot be read."""
MAX_DECODINGS = 3
"""Percent-decodings of one piece (servers and redirectors that decode twice exist); the
constant of :mod:`guardagent.trace.found.redirects` too, which imports this module."""


def percent_decoded(text: str) -> str:
    """`text` percent-decoded until it stops changing, at most ``MAX_DECODINGS - 1`` times."""
    for _ in range(MAX_DECODINGS - 1):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text


@dataclass(frozen=True)
class Redirector:
    """One well-known redirector: the hosts it runs on and how it carries its target.

    Attributes:
        name: What it is (for the reader of the table).
        hosts: Hosts it serves (``www.`` dropped, as the URL's key drops it); a name that
            starts with ``.`` takes every host under it; ``google.*`` takes the domain
            ``google`` under any public suffix (``google.co.uk``).
        read: The targets of a URL on those hosts (empty: this URL carries none).
    """

    name: str
    hosts: tuple[str, ...]
    read: Callable[[Location], list[Target]]

    def serves(self, host: str, domain: str | None) -> bool:
        """Whether a host (with its registrable domain) is one of this redirector's."""
        for name in self.hosts:
            if name.endswith(".*"):
                if domain is not None and domain.split(".", 1)[0] == name[:-2]:
                    return True
            elif host == name or (name.startswith(".") and host.endswith(name)):
                return True
        return False


def _paths(where: Location) -> list[str]:
    r"""The path decoded, as the browser sends it and as a server resolves it (``\\`` a ``/``)."""
    out: list[str] = []
    for path in (where.path, where.served):
        path = percent_decoded(path).replace("\\", "/")
        if path not in out:
            out.append(path)
    return out


def _segments(where: Location) -> list[list[str]]:
    """The non-empty segments of each reading of the path (:func:`_paths`)."""
    return [[s for s in path.split("/") if s] for path in _paths(where)]


def _after_prefix(where: Location, prefixes: frozenset[str]) -> list[Target]:
    """``/<prefix>/s/host/...`` (https) or ``/<prefix>/host/...`` (http): the AMP layout."""
    out: list[Target] = []
    for segments in _segments(where):
        if len(segments) < 2 or segments[0] not in prefixes:
            continue
        secure = segments[1] == "s"
        rest = segments[2:] if secure else segments[1:]
        query = f"?{where.query}" if where.query else ""
        out.append(("https://" if secure else "http://") + "/".join(rest) + query if rest else None)
    return out


def _amp_viewer(where: Location) -> list[Target]:
    return _after_prefix(where, frozenset({"amp"}))


def _amp_cache(where: Location) -> list[Target]:
    return _after_prefix(where, frozenset({"c", "v", "i", "r", "wp", "ii"}))


def _urldefense_v3(where: Location) -> list[Target]:
    """``/v3/__<url>__;<signature>``: the URL as written, its query in the outer query.

    A URL holding ``__;`` itself (a wrapped v3 link) ends at the first or the last one:
    both are read. Without ``__;`` the URL ends at the last ``__``, or runs to the end.
    """
    out: list[Target] = []
    for path in _paths(where):
        if not path.startswith("/v3/__"):
            continue
        text = path[len("/v3/__") :] + (f"?{where.query}" if where.query else "")
        ends = {text.find("__;"), text.rfind("__;")} - {-1} or {text.rfind("__")} - {-1}
        out.extend(text[:end] or None for end in sorted(ends or {len(text)}))
    return out


def _urldefense_v2(where: Location) -> list[Target]:
    """``/v2/url?u=https-3A__evil.example_x``: ``_`` is ``/``, ``-XX`` the byte ``%XX``."""
    if not any(s[:2] == ["v2", "url"] for s in _segments(where)):
        return []
    return [unquote(u.replace("_", "/").replace("-", "%")) for u in _param(where, "u")]


_READ_ELSEWHERE = SCHEMES | {"javascript", "vbscript", "data"}
"""Schemes :func:`~guardagent.trace.found.redirects.carried` reads a query piece by already."""


def _schemeless(where: Location, path: tuple[str, ...], names: tuple[str, ...]) -> list[Target]:
    """A query redirector's target written without a scheme: a URL all the same.

    Google's ``/url?q=`` (and the other query redirectors of :data:`REDIRECTORS`) sends the
    browser on to its target (the guard cannot tell that it does not for a schemeless one),
    so ``q=evil-phish.example/login`` is ``http://evil-phish.example/login`` whatever the
    suffix; one that does not parse so is unreadable. Read on a path that starts with the
    segments `path`, in the parameters `names`, each decoded as
    :func:`~guardagent.trace.found.redirects.carried` decodes a piece; a target with a scheme, or
    a path of the site (``/maps``, ``./x``, ``//host``), is read as any query piece is.
    """
    if not any(tuple(s[: len(path)]) == path for s in _segments(where)):
        return []
    out: list[Target] = []
    for value in (v for name in names for v in _param(where, name)):
        text = percent_decoded(value).strip()  # as carried() decodes a piece (%253A: a colon)
        if (
            not text
            or text[:1] in "/\\."
            or "://" in text
            or text.partition(":")[0].casefold() in _READ_ELSEWHERE
        ):
            continue
        out.append("http://" + text)
    return out


def _query_carrier(path: tuple[str, ...], *names: str) -> Callable[[Location], list[Target]]:
    """The reader of a redirector that carries its target in the query (:func:`_schemeless`)."""
    return functools.partial(_schemeless, path=path, names=names)


def _bing(where: Location) -> list[Target]:
    """``/ck/a?...&u=a1<base64url>``: a target that cannot be read.

    The URL is base64url-encoded, and base64 is case-sensitive while the guard reads a URL
    case-folded (:func:`~guardagent.trace.text.normal.reading_form`): it cannot be decoded.
    """
    if not any(s[:2] == ["ck", "a"] for s in _segments(where)):
        return []
    return [None for _ in _param(where, "u")]


def _opaque(where: Location) -> list[Target]:
    """A shortener keeps the target: any link on it carries one that cannot be read."""
    return [None] if any(_segments(where)) else []


def _param(where: Location, name: str) -> list[str]:
    """Every value of a query parameter, form-decoded (``+`` a space, percent escapes)."""
    return [v for k, v in parse_qsl(where.query, keep_blank_values=True) if k == name]


SHORTENERS = (
    "t.co",
    "bit.ly",
    "lnkd.in",
    "goo.gl",
    "tinyurl.com",
    "ow.ly",
    "buff.ly",
    "is.gd",
    "v.gd",
    "rb.gy",
    "t.ly",
    "cutt.ly",
    "rebrand.ly",
    "tiny.cc",
    "bit.do",
    "shorturl.at",
    "s.id",
    "qrco.de",
    "trib.al",
    "dlvr.it",
    "fb.me",
    "bl.ink",
    "adf.ly",
    "shorte.st",
    "surl.li",
    "tiny.one",
    "short.gy",
    "soo.gd",
    "x.co",
    "po.st",
    "j.mp",
    "amzn.to",
)
"""Link shorteners whose target only the shortener knows."""

REDIRECTORS = (
    Redirector("Google AMP viewer", ("google.*",), _amp_viewer),
    Redirector("AMP cache", (".cdn.ampproject.org", "cdn.ampproject.org"), _amp_cache),
    Redirector("Proofpoint URL Defense v3", ("urldefense.com", "urldefense.us"), _urldefense_v3),
    Redirector("Proofpoint URL Defense v2", ("urldefense.proofpoint.com",), _urldefense_v2),
    Redirector("Google /url", ("google.*",), _query_carrier(("url",), "q", "url")),
    Redirector(
        "Facebook link shim", ("l.facebook.com", "lm.facebook.com"), _query_carrier(("l.php",), "u")
    ),
    Redirector("Instagram link shim", ("l.instagram.com",), _query_carrier((), "u")),
    Redirector("YouTube redirect", ("youtube.com",), _query_carrier(("redirect",), "q")),
    Redirector("Slack redirect", ("slack-redir.net",), _query_carrier(("link",), "url")),
    Redirector(
        "Outlook Safe Links", (".safelinks.protection.outlook.com",), _query_carrier((), "url")
    ),
    Redirector("Reddit outbound", ("out.reddit.com",), _query_carrier((), "url")),
    Redirector("Bing click tracker", ("bing.com",), _bing),
    Redirector("link shortener", SHORTENERS, _opaque),
)
"""The well-known redirectors, and how each carries its target."""


def known_targets(where: Location) -> list[Target]:
    """The targets a well-known redirector's URL carries (None: one that cannot be read).

    Args:
        where: The URL as the browser reads it.
    """
    domain = registrable(where.host)
    out: list[Target] = []
    for redirector in REDIRECTORS:
        if redirector.serves(where.host, domain):
            out.extend(redirector.read(where))
    return out
