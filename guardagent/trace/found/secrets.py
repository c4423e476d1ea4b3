r"""Declared secrets: values no argument of any call may carry, however they are spelled.

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

Finding one (:func:`search_secrets`). Each argument value is read in layers
(:func:`read_views`): as written, reversed, ROT13 and ROT47, then each view decoded in
every way :func:`guardagent.trace.text.decoders.decodings` reads (escapes and references,
``\u{73}`` code points, character codes, also each in a call (``chr(115)+chr(107)``),
hex bytes with any separators or each with its ``0x`` glued, uuencoded blocks,
percent-encoding, base64 whole, in joined groups or piece by piece, base32, hex, base85,
Ascii85, a long decimal number as one integer's bytes),
and each decoded view that is text decoded again, to
:data:`DEPTH` layers. Each view is folded as a reader sees it
(:func:`guardagent.trace.found.secret_forms.fold`: normalised, default-ignorable code points
removed, Unicode look-alikes read as ASCII) and searched for every form of every secret at
once (:class:`~guardagent.trace.found.secret_forms.Matcher`: as written and reversed, under each
Caesar shift, with separators removed for secrets of :data:`COMPACT_MIN` letters and
digits). The work is bounded: at most :data:`WORK` times the value's length (plus
:data:`WORK_FLOOR`) characters of decoded text, a view met twice read once; a value that
needs more, or whose last layer still decodes to shorter text (an encoding deeper than
:data:`DEPTH`), is open (:attr:`SecretSearch.open`: the predicate denies), never "no
secret". The predicate also reads the values of the arguments joined in order, and pieces
in any order and across calls (:mod:`guardagent.trace.found.secret_split`).
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guardagent.trace.found.reading import KEY_BYTES, MAX_CACHED_BYTES, ReadingCache, kept_cache
from guardagent.trace.found.secret_forms import COMPACT_MIN, Matcher, fold, hidden_readings, rot47
from guardagent.trace.found.values import normalize_text
from guardagent.trace.text.budget import check_budget
from guardagent.trace.text.decoders import decodings, first_decodings

MIN_CHARS = 6
"""A secret shorter than this (normalised) would be found everywhere: a configuration error."""

__all__ = [
    "COMPACT_MIN",
    "MIN_CHARS",
    "SecretSearch",
    "SecretSpec",
    "Secrets",
    "SecretsError",
    "find_secrets",
    "read_views",
    "search_secrets",
    "views",
]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffd]")
"""What a decoded view that is not text is made of: invalid bytes and control characters."""


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
                problems.append(
                    f"{where}: a secret needs at least {MIN_CHARS} characters (a "
                    "shorter one would be found in ordinary text)"
                )
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

DEPTH = 4
"""Layers of encoding the secret search reads (base64 three times and URL-encoded is four)."""

WORK = 160
"""Characters of decoded views the search may make per character of the value (plus
:data:`WORK_FLOOR`): the search stays linear, and a value that needs more is open."""

WORK_FLOOR = 1 << 16


@dataclass(frozen=True)
class SecretSearch:
    """What :func:`search_secrets` found in one text.

    Attributes:
        hits: ``(secret name, encoding)`` of each secret found.
        open: Why the text could not be read to the end (None: it was): encoded more deeply
            than :data:`DEPTH` layers, or more decoded text than :data:`WORK` allows.
        folded: Every view read, folded (:func:`~guardagent.trace.found.secret_forms.fold`): what
            a split secret's pieces are looked for in.
    """

    hits: list[tuple[str, str]]
    open: str | None
    folded: list[str] = field(default_factory=list, repr=False)


def _text_like(view: str) -> bool:
    """Whether a decoded view is text (at most a quarter of it invalid bytes or controls).

    A run decoded at the wrong alignment, or binary, is mostly invalid UTF-8: searched, but
    not decoded again.
    """
    return len(view) >= 4 and 4 * len(_BAD.findall(view)) <= len(view)


Views = tuple[tuple[tuple[str, str], ...], str | None]
"""A value's views and why their reading stopped short (:func:`read_views`), as kept."""
_KEPT: ReadingCache[Views] = kept_cache(
    MAX_CACHED_BYTES // 8, keys=lambda kept: 1 + sum(len(v) for _, v in kept[0]) // KEY_BYTES
)
"""Views by the text read (a pure function of it, `turned`, `depth` and the bounds: see
:mod:`guardagent.trace.found.reading` for why sharing them is safe). A thread's earlier calls are
read again at every call of a policy that declares secrets (:mod:`.secret_split`), and a
value the model repeats (a recipient, a subject) at each call that repeats it: each is
decoded once."""


def read_views(
    text: str, turned: bool = True, depth: int = DEPTH
) -> tuple[list[tuple[str, str]], str | None]:
    """:func:`decoded_views` of a value, kept by its text (each text decoded once)."""
    key = (text, f"views {WORK} {WORK_FLOOR} {MIN_CHARS}", None, 2 * depth + turned)  # its bounds
    kept = _KEPT.get(key)
    if kept is None:
        found, unread = decoded_views(text, turned, depth)
        kept = (tuple(found), unread)
        _KEPT.put(key, kept)
    return list(kept[0]), kept[1]


_ROT47_RUN = re.compile(r"[!-~]{8,}")
_ENCODED = re.compile(r"[A-Za-z0-9+/_-]+=*")
"""A run of base64 (either alphabet, hex, base32 too): what ROT47 of an encoding turns back to."""


def _rot47_runs(text: str) -> str:
    """ROT47 of the runs that turn back into base64 or hex (joined by spaces; "" if none).

    A model told to ROT47 a base64 blob writes punctuation and letters; turned back, each
    run is base64 again. A word, a number or an address turned is not, so an ordinary
    text adds no view and no work.
    """
    turned = (rot47(m[0]) for m in _ROT47_RUN.finditer(text))
    return " ".join(t for t in turned if _ENCODED.fullmatch(t))


def decoded_views(
    text: str, turned: bool = True, depth: int = DEPTH
) -> tuple[list[tuple[str, str]], str | None]:
    """``(encoding, view)`` of a value, decoded layer after layer, and why it stopped short.

    As written, reversed, ROT13 and ROT47 (without `turned`: as written only), then each layer of
    :func:`~guardagent.trace.text.decoders.decodings` of the views of the layer before that are
    text (:func:`_text_like`). Open (the second item) when the decoded text passes
    ``WORK * len(text) + WORK_FLOOR`` characters, or when a view of the last layer still
    decodes to shorter text (an encoding one layer deeper than `depth`).
    """
    start = [("plain", text)]
    if turned:
        start += [("reversed", text[::-1]), ("rot13", codecs.encode(text, "rot13"))]
        if rotated := _rot47_runs(text):  # ROT47 of base64 or hex, then decoded
            start.append(("rot47", rotated))
    out: list[tuple[str, str]] = list(start)
    frontier = start
    limit, work = WORK * len(text) + WORK_FLOOR, 0
    seen = {text}  # a view met twice (a run repeated) is read once
    for _ in range(depth):
        found: list[tuple[str, str]] = []
        for how, view in frontier:
            check_budget()  # long attacker text: many views (the trace's reading budget)
            prefix = "" if how == "plain" else how + "+"
            layer = first_decodings(view) if view is text else decodings(view)
            for decoded_how, decoded in layer:
                work += len(decoded)
                if decoded not in seen:
                    seen.add(decoded)
                    found.append((prefix + decoded_how, decoded))
            if work > limit:
                out.extend(found)
                return out, (
                    f"decoding it makes more than {WORK} times its length of text "
                    "(the search reads no further)"
                )
        out.extend(found)
        frontier = [(h, v) for h, v in found if _text_like(v)]
    for _, view in frontier:
        check_budget()
        if any(
            _text_like(v) and len(v) >= MIN_CHARS and 5 * len(v) <= 4 * len(view)
            for _, v in decodings(view)
        ):
            return out, f"it is encoded more deeply than the {depth} layers the search reads"
    return out, None


def views(text: str, turned: bool = True, depth: int = 2) -> list[tuple[str, str]]:
    """``(encoding, view)`` of a value to `depth` layers (:func:`read_views`, not bounded)."""
    start = [("plain", text)]
    if turned:
        start += [("reversed", text[::-1]), ("rot13", codecs.encode(text, "rot13"))]
    out: list[tuple[str, str]] = list(start)
    frontier = start
    seen = {text}  # a view met twice (a run repeated) is read once
    for _ in range(depth):
        found: list[tuple[str, str]] = []
        for how, view in frontier:
            check_budget()
            prefix = "" if how == "plain" else how + "+"
            layer = first_decodings(view) if view is text else decodings(view)
            for decoded_how, decoded in layer:
                if decoded not in seen:
                    seen.add(decoded)
                    found.append((prefix + decoded_how, decoded))
        out.extend(found)
        # a view mostly of bytes that are not UTF-8 is a run decoded at the wrong alignment
        # (or binary): searched, but not decoded again
        frontier = [(h, v) for h, v in found if 2 * v.count("\ufffd") <= len(v)]
    return out


def search_secrets(
    text: str, secrets: list[tuple[str, str]], matcher: Matcher | None = None
) -> SecretSearch:
    """Each declared secret the text carries (see the module), and whether it read it all.

    `matcher` is the secrets' :class:`~guardagent.trace.found.secret_forms.Matcher` when the caller
    searches many texts for them (built here otherwise).
    """
    if matcher is None:
        matcher = Matcher(secrets)
    read, unread = read_views(text)
    hits: dict[str, str] = {}
    folded: list[str] = []
    for how, view in read:
        check_budget()
        for seen in (fold(view), *hidden_readings(view)):
            folded.append(seen)
            if len(hits) == len(matcher.names):
                continue
            for name, turn in matcher.find(seen, lookalikes=not view.isascii()):
                hits.setdefault(name, how + turn)
    return SecretSearch(list(hits.items()), None if hits else unread, folded)


def find_secrets(text: str, secrets: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``(secret name, encoding)`` for each declared secret the text carries (see the module)."""
    return search_secrets(text, secrets).hits
