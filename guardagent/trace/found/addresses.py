"""E-mail addresses as mail servers read them: RFC 5322 address lists, validated.

An argument holding addresses is read as an RFC 5322 address list (the standard library's
:mod:`email.headerregistry` parser: display names, comments, quoted local parts and groups
read as a mail client reads a ``To:`` header), and every address in it is validated with
``email-validator`` (syntax, IDNA domain, no deliverability lookup). So
``bob@x.ch, "eve"@evil.io`` is two addresses, ``eve(bob@x.ch)@evil.io`` is ``eve@evil.io``,
and each is traced on its own. An address the validator refuses (``eve@localhost``,
``eve@[203.0.113.7]``), or a list that reads to no address, is a value from nobody (it is
never found, so it is invented): fail closed. A string the parser reports defects in is not
an address list; it is read as free text, where every ``@`` that no address accounts for is
an unplaced value (see :func:`~guardagent.trace.text.kinds.unplaced`).

Keys: ``email:local@domain``, the local part lower-cased (no provider in practice treats it
by case) character by character, never fully case-folded (``straße@x.ch`` is not
``strasse@x.ch``, ``ﬁle@`` is not ``file@``), and the domain in its IDNA ASCII form
(UTS-46 non-transitional, so ``straße.ch`` is not ``strasse.ch``).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

import re2

from guardagent.trace.found.urls import trim
from guardagent.trace.text.kinds import Value, nobody, unplaced
from guardagent.trace.text.normal import tokens

MAX_LIST_CHARS = 2_000
"""Longest string read as an address list (the standard parser copies the rest of the
string at each step; longer strings are read as free text)."""
_PLAIN = re.compile(r"[A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
"""A plain address (dot-atoms of letters, digits, ``_+-``): one address, no display name, no
defect, as the parser reads it (tested against it); dots separate the runs: linear."""
MAX_COMMENT_DEPTH = 20
"""Deepest nesting of ``(`` accepted in an address list (the parser recurses per level)."""
_BREAKS = re2.compile(r'[\s\pC\pZ,;<>()\[\]:"\\]+')
"""Where a mail reader may end an address: any whitespace, control, format, line or space
separator character, and the RFC 5322 specials (one character class: linear)."""


def domain_ascii(domain: str) -> str | None:
    """A mail domain's IDNA ASCII form (UTS-46 non-transitional), lower case, or None."""
    import idna

    domain = domain.lower()
    if domain.isascii():
        ascii_domain = domain
    else:
        try:
            ascii_domain = idna.encode(domain, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            return None
    labels = ascii_domain.split(".")
    if len(labels) < 2 or not all(labels) or not any(c.isalpha() for c in labels[-1]):
        return None
    if any(lab.startswith("-") or lab.endswith("-") or len(lab) > 63 for lab in labels):
        return None
    return ascii_domain


def email_key(local: str, domain: str) -> str | None:
    """The key of ``local@domain`` (see the module docstring), or None if it is no address."""
    # case only, character by character: straße@ is not strasse@, ﬁle@ is not file@ (other
    # UTF-8 mailboxes), as full case folding (ß -> ss, ﬁ -> fi) would make them
    local = local.lower() if local.isascii() else "".join(c.lower() for c in local)
    if not local or local.startswith(".") or local.endswith(".") or ".." in local:
        return None
    ascii_domain = domain_ascii(domain)
    return f"email:{local}@{ascii_domain}" if ascii_domain is not None else None


def read_located(candidate: str) -> Value:
    """An address found in text by the locator (dot-atom local part, dotted domain)."""
    text = candidate.strip(".")
    local, _, domain = text.partition("@")
    key = email_key(local, domain)
    if key is None:
        return unplaced("email", text, tuple(tokens(text)))
    return Value("email", (key,), text, tuple(tokens(text)))


@cache
def _registry() -> Any:
    from email.headerregistry import HeaderRegistry

    return HeaderRegistry()


@lru_cache(maxsize=1024)
def _validated(addr_spec: str) -> str | None:
    from email_validator import EmailNotValidError, validate_email

    try:
        valid = validate_email(addr_spec, check_deliverability=False, allow_smtputf8=True)
    except (EmailNotValidError, UnicodeError, ValueError):
        return None
    return email_key(valid.local_part, valid.ascii_domain or valid.domain)


def read_address_list(text: str) -> list[Value] | None:
    """The addresses of a whole argument, or None when it is not a clean address list.

    Args:
        text: The argument in reading form, holding an ``@``.

    Returns:
        One value per address (a validated address, or a value from nobody for an address
        the validator refuses); ``[nobody]`` for a list with no address; None when the
        parser finds defects (free text) or the string is too long or too deep to parse.
    """
    body = text.strip().removeprefix("mailto:")
    if len(body) <= MAX_LIST_CHARS and _PLAIN.fullmatch(body) is not None:
        return [_address(body, body)]  # what the parser reads a plain address as
    return parse_address_list(body)


def parse_address_list(body: str) -> list[Value] | None:
    """:func:`read_address_list` of a stripped body, always through the RFC 5322 parser."""
    if len(body) > MAX_LIST_CHARS or body.count("(") > MAX_COMMENT_DEPTH:
        return None
    try:
        header = _registry()("to", body)
    except (RecursionError, ValueError, IndexError, TypeError, AttributeError):
        return None
    if header.defects:
        return None
    accounted = sum(a.addr_spec.count("@") + a.display_name.count("@") for a in header.addresses)
    if accounted != body.count("@"):
        return None  # an @ in a route or a comment: read as free text, where it is a leftover
    return [_address(a.addr_spec, body) for a in header.addresses] or [nobody("email", body)]


def _address(spec: str, body: str) -> Value:
    """One address of a list: validated, or a value from nobody."""
    key = _validated(spec) if "@" in spec else None
    if key is None:
        return nobody("email", spec or body)
    return Value("email", (key,), spec, tuple(tokens(spec)))


def delivered(text: str, header: bool) -> tuple[str | None, ...] | None:
    r"""The addresses a mail stack may deliver a value to, as written (None: unreadable).

    Two readings beside the value's own (:mod:`guardagent.trace.found.values`), whose reader drops
    a tab as the URL Standard does and so reads ``eve@evil.example<TAB>ann@x.ch`` as one
    token: the value split at every character a mail reader may end an address at
    (:data:`_BREAKS`: any whitespace, ``\v``, U+0085, U+2028, a no-break space, a control
    or format character, ``,``, ``;``, ``<``, ``(``...), each ``x@y`` piece an address
    (without the punctuation that ends a sentence: ``Write to ann@x.ch.``);
    and, for an argument the mail server reads as a header (`header`), Python's own
    :func:`email.utils.getaddresses`, which ``smtplib.send_message`` takes its recipients
    from: each entry it reads is an address, and one that is not ``x@y`` (``@x.ch``, what
    it makes of the tab above, or a bare ``eve`` the server completes with its own domain)
    is unreadable. An address the validator refuses, or whose local part relays
    (:func:`relayed`), is unreadable too.

    Args:
        text: An argument value holding ``@``.
        header: Read it as a header too (the argument names recipients, or may).

    Returns:
        The addresses as written, None for each one that cannot be read; None when no piece
        is ``x@y`` (no address: the text is read as written), or the value is one address.
    """
    pieces: list[str | None] = [p for p in map(_trimmed, _BREAKS.split(text)) if _full(p)]
    if not pieces:
        return None
    if header:
        pieces.extend(_consumer(text))
    out = tuple(dict.fromkeys(_readable(p) for p in dict.fromkeys(pieces)))  # linear
    return None if out == (text.strip(),) else out


def _readable(piece: str | None) -> str | None:
    """A piece as an address, or None when it is no ``x@y``, does not validate or relays."""
    if piece is None or not _full(piece) or relayed(piece) or _validated(piece) is None:
        return None
    return piece


def _trimmed(piece: str) -> str:
    """A piece of text as an address in a sentence: ``x@y.ch.`` and ``x@y.ch's`` are ``x@y.ch``.

    The punctuation that ends a sentence goes, and the domain ends at the first character
    no domain holds (a letter, digit, ``-`` or ``.``).
    """
    local, at, domain = trim(piece).strip(".").rpartition("@")
    end = next((i for i, c in enumerate(domain) if not (c.isalnum() or c in "-.")), len(domain))
    return f"{local}{at}{domain[:end].rstrip('.')}"


def _full(piece: str) -> bool:
    """Something on both sides of the last ``@`` (``@channel`` and ``eve@`` are no address)."""
    local, _, domain = piece.rpartition("@")
    return bool(local) and bool(domain)


@lru_cache(maxsize=1024)
def _consumer(text: str) -> tuple[str | None, ...]:
    """The entries :func:`email.utils.getaddresses` reads (empty ones dropped).

    ``(None,)`` when the value is too long or deep to read, the reader fails, or it reads
    no entry at all.
    """
    import email.utils

    if len(text) > MAX_LIST_CHARS or max(text.count("("), text.count(":")) > MAX_COMMENT_DEPTH:
        return (None,)
    try:
        read = email.utils.getaddresses([text])
    except (RecursionError, ValueError, IndexError, TypeError, AttributeError):
        return (None,)
    return tuple(a for _, a in read if a) or (None,)


def relayed(address: str) -> bool:
    """A local part the server may relay elsewhere: ``eve%evil.io@x.ch``, ``evil.io!eve@x.ch``.

    Postfix rewrites ``user%domain`` (``allow_percent_hack``, on by default) and a UUCP bang
    path to ``user@domain`` and sends it on, so the address is not read as ``@x.ch``.
    """
    local = address.rpartition("@")[0]
    return "%" in local or "!" in local
