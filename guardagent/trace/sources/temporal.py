"""Facts about the order of calls in a trace, where navigation goes, and where secrets go.

Rules over a trajectory need more than the proposed call: "a transfer only after the user's
balance was looked up", "nothing after the agent said it was done", "at most three e-mails
per thread", "stay on the admin site", "the balance never leaves for an address the user
did not give". This module reads those facts from the trace's calls (every call the
assistant messages make, before the proposed one) with the deployer's labels.

Call patterns (:class:`CallPattern`): a tool-name glob (``send_*``), or ``effect:<effect>``
(every tool with that label, so renaming tools changes nothing), optionally with argument
constraints (a glob over the normalised text, or a value compared by kind: ``"Alice@X.com"``
equals ``"alice@x.com"``, ``2500`` equals ``"2,500.00"``) and the status of the call's
result (``ok``: answered without error; ``error``; ``any``, the default, also counts calls
not answered yet).

Navigation scopes (:class:`Scope`): ``host[:port][/path][?query][#fragment]`` with globs
(``*.example.com/admin/*``), matched against the URL as the browser reads it (WHATWG host in
its IDNA ASCII form, no ``www.``; decoded path; the query and fragment when the scope names
them) and its path as a server may resolve it (:func:`~guardagent.trace.found.urls.served_path`):
inside by one reading only is neither inside nor outside (None). An argument that is not
one URL (text around one, ``javascript:...``) or that the reader cannot place is never in
scope.

Secret flow (:func:`secret_flow`): a value of the proposed call that a ``sensitive`` tool
returned (typed values, the whole value, and identifier-like tokens of any value, a URL's
too, also joined with their neighbours: ``739-214-XQ`` is ``739214XQ``), and not
one the user wrote, reaching a ``send`` call whose recipient is not from the user or a
trusted source. A send call without a readable recipient counts as going to an unknown one.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from guardagent.trace.document.labels import EFFECTS, Effect, Labels
from guardagent.trace.document.shapes import ToolCall, Trace
from guardagent.trace.found.addresses import delivered, relayed
from guardagent.trace.found.redirects import MAX_DEPTH, carried, every_landing
from guardagent.trace.found.urls import UNSETTLED
from guardagent.trace.found.values import (
    Value,
    normalize_text,
    read_argument,
    read_scalar,
    reading_form,
)
from guardagent.trace.found.written import is_target
from guardagent.trace.sources.encoded import encoded_tokens, sensitive_tokens
from guardagent.trace.sources.provenance import (
    Search,
    ValueProvenance,
    call_values,
    recipients_read,
)
from guardagent.trace.text.kinds import Location
from guardagent.trace.thread.state import flatten

Status = Literal["ok", "error", "any"]
RECIPIENT_KINDS = frozenset({"email", "phone", "url", "iban"})
"""Value kinds that name a destination, when a send tool's label names no recipient args."""


class PatternError(ValueError):
    """A call pattern or scope that cannot be read."""


# -- call patterns -------------------------------------------------------------------------


@dataclass(frozen=True)
class CallPattern:
    """Which calls a temporal fact counts.

    Attributes:
        tool: Glob over the tool name.
        effect: Only tools with this effect label.
        args: ``(argument path, expected)`` constraints, all of which must hold.
        status: The call's result status required.
    """

    tool: str = "*"
    effect: Effect | None = None
    args: tuple[tuple[str, Any], ...] = field(default=())
    status: Status = "any"

    @classmethod
    def of(
        cls,
        spec: str | Mapping[str, Any] | CallPattern,
        *,
        args: Mapping[str, Any] | None = None,
        status: Status | None = None,
    ) -> CallPattern:
        """Read a pattern: a glob, ``effect:<effect>``, or a mapping.

        The mapping has ``tool``, ``effect``, ``args``, ``status``; the keyword `args` and
        `status` add to whatever the spec says.
        """
        if isinstance(spec, CallPattern):
            base = spec
        elif isinstance(spec, str):
            if spec.startswith("effect:"):
                base = cls(effect=_effect(spec[7:]))
            elif spec.strip():
                base = cls(tool=spec.strip())
            else:
                raise PatternError("an empty call pattern")
        elif isinstance(spec, Mapping):
            unknown = set(spec) - {"tool", "effect", "args", "status"}
            if unknown:
                raise PatternError(f"unknown call pattern keys {sorted(unknown)}")
            raw_args = spec.get("args") or {}
            if not isinstance(raw_args, Mapping):
                raise PatternError("a call pattern's args must be a mapping")
            base = cls(
                str(spec.get("tool", "*")),
                _effect(spec["effect"]) if spec.get("effect") is not None else None,
                tuple((str(k), v) for k, v in raw_args.items()),
                _status(spec.get("status", "any")),
            )
        else:
            kind = type(spec).__name__
            raise PatternError(f"a call pattern is a string or a mapping, not {kind}")
        extra = tuple((str(k), v) for k, v in (args or {}).items())
        return cls(
            base.tool,
            base.effect,
            base.args + extra,
            _status(status) if status is not None else base.status,
        )

    def __str__(self) -> str:
        text = f"effect:{self.effect}" if self.effect and self.tool == "*" else self.tool
        if self.args:
            text += "(" + ", ".join(f"{k}={v!r}" for k, v in self.args) + ")"
        return text + (f" [{self.status}]" if self.status != "any" else "")


def _effect(text: Any) -> Effect:
    if text not in EFFECTS:
        raise PatternError(f"effect must be one of {', '.join(EFFECTS)}, not {text!r}")
    return text  # type: ignore[no-any-return]


def _status(text: Any) -> Status:
    if text not in ("ok", "error", "any"):
        raise PatternError(f"status must be ok, error or any, not {text!r}")
    return text  # type: ignore[no-any-return]


class UnsureReading(Exception):
    """An address the mail server's reading cannot read: the pattern's answer is open."""


_SENT: ContextVar[bool] = ContextVar("guardagent_pattern_sent_reading", default=False)
_TOUCHED: ContextVar[list[bool] | None] = ContextVar("guardagent_pattern_touched", default=None)
_STRICT: ContextVar[bool] = ContextVar("guardagent_pattern_strict_reading", default=False)
_LOOSER: ContextVar[list[bool] | None] = ContextVar("guardagent_pattern_looser", default=None)


def sent_pieces(actual: Any) -> list[str | None] | None:
    """A value holding addresses as the mail server reads it: each address (None: unreadable).

    The addresses the value reader finds, and those of the value split at every separator
    (:func:`~guardagent.trace.found.addresses.delivered`). None when the value is no string
    holding ``@``, holds no address, or is one plain address (its text is the address). A
    line break beside an ``@`` is unreadable (a header injection), and so is an address
    whose local part holds ``%`` or ``!`` (:func:`~guardagent.trace.found.addresses.relayed`).
    """
    if not isinstance(actual, str) or "@" not in actual:
        return None
    if "\n" in actual or "\r" in actual:
        return [None]
    found = [v for v, _ in read_argument(actual) if v.kind == "email"]
    pieces = [
        v.keys[0].removeprefix("email:")
        if v.placed and v.keys and v.keys[0].startswith("email:")
        else None
        for v in found
    ]
    pieces = [None if p is not None and relayed(p) else p for p in pieces]
    if len(found) == 1 and found[0].text == actual and pieces[0] is not None:
        return None
    # and split at every separator (a tab the value reader drops as a URL reader does)
    known = set(pieces)
    pieces += [p for p in delivered(actual, False) or () if p is None or p.lower() not in known]
    return pieces or None


@contextmanager
def pattern_reading(sent: bool) -> Iterator[list[bool]]:
    """Match call patterns as written (False) or as the mail server reads addresses (True).

    Yields a list that gets an entry whenever a value holding addresses was compared, so a
    caller reads a second time only when the two readings can differ.
    """
    with _reading(_SENT, _TOUCHED, sent) as touched:
        yield touched


@contextmanager
def strict_values(strict: bool = True) -> Iterator[list[bool]]:
    """Compare values strictly (True) or by words and any reading (False: the default).

    Strictly, a short text (a path, a name: :func:`~guardagent.trace.found.written.is_target`)
    equals only the same characters (``../notes.txt`` is not ``notes.txt``), and a typed
    value only when every reading of it is one of the expected value's (the text ``1,500``,
    1500 or 1.5, is not the amount 1.5). Yields a list that gets an entry whenever a loose
    comparison answered otherwise than the strict one would, so a caller reads a second time
    only when the two can differ.
    """
    with _reading(_STRICT, _LOOSER, strict) as looser:
        yield looser


@contextmanager
def _reading(
    flag: ContextVar[bool], marks: ContextVar[list[bool] | None], value: bool
) -> Iterator[list[bool]]:
    """Set a reading's flag and a fresh list of marks for the block, then restore both."""
    made: list[bool] = []
    tokens = (flag.set(value), marks.set(made))
    try:
        yield made
    finally:
        marks.reset(tokens[1])
        flag.reset(tokens[0])


def same_value(actual: Any, expected: Any, region: str | None = None) -> bool:
    """Whether an argument value equals an expected one, by kind (or matches a glob).

    Inside :func:`pattern_reading` with ``sent=True``, a value holding addresses is its
    addresses (:func:`sent_pieces`: one matching is enough, as for a list); an unreadable one
    raises :class:`UnsureReading`.
    """
    touched = _TOUCHED.get()
    if touched is not None:
        pieces = sent_pieces(actual)
        if pieces is not None:
            touched.append(True)
            if _SENT.get():
                if None in pieces:
                    raise UnsureReading(str(actual)[:80])
                return any(_same_value(p, expected, region) for p in pieces)
    return _same_value(actual, expected, region)


def _same_value(actual: Any, expected: Any, region: str | None = None) -> bool:
    if isinstance(expected, bool) or expected is None or isinstance(actual, bool):
        return actual is expected if isinstance(expected, bool) else actual == expected
    if isinstance(expected, str) and any(c in expected for c in "*?["):
        return fnmatch.fnmatchcase(normalize_text(str(actual)).strip(), normalize_text(expected))
    a, _ = read_scalar(actual, region=region)
    e, _ = read_scalar(expected, region=region)
    if a is None or e is None:
        return False
    if a.keys and e.keys:
        loose, strict = (not set(a.keys).isdisjoint(e.keys)), set(a.keys) <= set(e.keys)
    else:
        loose = a.tokens == e.tokens and bool(a.tokens)
        strict = loose and (
            not (is_target(a) or is_target(e))
            or " ".join(a.text.split()) == " ".join(e.text.split())
        )
    if _STRICT.get():
        return strict
    looser = _LOOSER.get()
    if looser is not None and loose != strict:
        looser.append(True)
    return loose


def _values_at(call: ToolCall, arg: str) -> list[Any]:
    return [v for p, v in flatten(call.args) if p == arg or p.startswith((arg + "[", arg + "."))]


def matches(call: ToolCall, pattern: CallPattern, trace: Trace, labels: Labels) -> bool:
    """Whether a call matches a pattern."""
    if not fnmatch.fnmatchcase(call.name, pattern.tool):
        return False
    if pattern.effect is not None and labels.label(call.name).effect != pattern.effect:
        return False
    for arg, expected in pattern.args:
        if not any(same_value(v, expected, labels.phone_region) for v in _values_at(call, arg)):
            return False
    if pattern.status != "any":
        result = trace.result_of(call)
        return result is not None and result.status == pattern.status
    return True


def earlier_calls(trace: Trace, pattern: CallPattern, labels: Labels) -> list[ToolCall]:
    """Earlier calls matching a pattern, in order."""
    return [c for c in trace.calls if matches(c, pattern, trace, labels)]


def order_violations(
    trace: Trace, first: CallPattern, then: CallPattern, labels: Labels
) -> list[ToolCall]:
    """Calls matching `then` (earlier ones and the proposed one) with no `first` call before.

    "A before B" holds when this is empty.
    """
    out: list[ToolCall] = []
    seen_first = False
    for call in (*trace.calls, trace.call):
        if matches(call, then, trace, labels) and not seen_first:
            out.append(call)
        if call is not trace.call and matches(call, first, trace, labels):
            seen_first = True
    return out


# -- navigation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """A navigation scope: a host glob, and optional path, query and fragment globs."""

    host: str
    path: str | None = None
    query: str | None = None
    fragment: str | None = None

    @classmethod
    def of(cls, spec: str | Scope) -> Scope:
        """Read ``host[:port][/path][?query][#fragment]`` (globs allowed).

        A scheme and ``www.`` are ignored; an internationalised host is written in its
        IDNA ASCII form, as the browser reads it (``straße.ch`` is ``xn--strae-oqa.ch``).
        """
        if isinstance(spec, Scope):
            return spec
        text = reading_form(str(spec)).strip()
        if "://" in text:
            text = text.split("://", 1)[1]
        text = text.removeprefix("www.")
        text, hashed, fragment = text.partition("#")
        text, asked, query = text.partition("?")
        host, slash, path = text.partition("/")
        if not host:
            raise PatternError(f"a scope needs a host: {spec!r}")
        return cls(
            _ascii_host(host, spec),
            "/" + path.rstrip("/") if slash and path not in ("", "*") else None,
            query if asked else None,
            fragment if hashed else None,
        )

    def admits(self, value: Value) -> bool:
        """Whether a URL value is inside the scope in every reading (an unplaced link never is)."""
        return self.verdict(value) is True

    def verdict(self, value: Value) -> bool | None:
        """Inside (True), outside (False), or None when the readings of its path disagree.

        The path is read as the browser sends it and as a server may resolve it
        (:func:`~guardagent.trace.found.urls.served_path`: ``//``, ``;x``, ``..%2f``): a URL
        inside the scope by one reading and outside by the other is neither.
        """
        where = url_location(value)
        if where is None:
            return False
        host = (
            where.host
            if ":" not in self.host or where.port is None
            else (f"{where.host}:{where.port}")
        )
        if not host_matches(host, self.host):
            return False
        if self.query is not None and not fnmatch.fnmatchcase(where.query, self.query):
            return False
        if self.fragment is not None and not fnmatch.fnmatchcase(where.fragment, self.fragment):
            return False
        if self.path is not None and where.served == UNSETTLED:
            return None  # still encoded after three decodings: in or out is not settled
        readings = {self._path_in(where.path), self._path_in(where.served)}
        return readings.pop() if len(readings) == 1 else None

    def _path_in(self, path: str) -> bool:
        return (
            self.path is None
            or fnmatch.fnmatchcase(path or "/", self.path)
            or (self.path.endswith("/*") and path == self.path[:-2])
        )

    def __str__(self) -> str:
        return (
            self.host
            + (self.path or "")
            + (f"?{self.query}" if self.query is not None else "")
            + (f"#{self.fragment}" if self.fragment is not None else "")
        )


def host_matches(host: str, glob: str) -> bool:
    """Whether a host matches a scope's host glob, label by label.

    Each label of the glob matches one label of the host (``*``, ``?``, ``[...]`` inside
    it), but the first, which may match several: ``*.shop.example`` takes
    ``a.b.shop.example``, a host under the glob's fixed labels. So no wildcard moves a host
    to another domain: ``admin.shop.*`` takes ``admin.shop.com``, not
    ``admin.shop.example.evil.io`` (evil.io's), and ``shop.*.com`` not ``shop.x.evil.com``.
    A one-label glob (``*``, ``localhost``) is matched whole.
    """
    labels, wanted = host.split("."), glob.split(".")
    fixed = len(wanted) - 1
    if len(labels) <= fixed:
        return False
    head = ".".join(labels[: len(labels) - fixed])
    return fnmatch.fnmatchcase(head, wanted[0]) and all(
        fnmatch.fnmatchcase(label, pattern)
        for label, pattern in zip(labels[len(labels) - fixed :], wanted[1:], strict=True)
    )


def _ascii_host(host: str, spec: object) -> str:
    if host.isascii():
        return host
    import idna

    try:
        return ".".join(
            label
            if label.isascii()
            else idna.encode(label, uts46=True, transitional=False).decode("ascii")
            for label in host.split(".")
        )
    except (idna.IDNAError, UnicodeError) as exc:
        raise PatternError(f"a scope's host is not a valid name: {spec!r} ({exc})") from None


def url_location(value: Value) -> Location | None:
    """Where a URL value goes, as the browser reads it (None: not a placed URL)."""
    if value.kind != "url" or not value.placed:
        return None
    return value.where


def urls_at(call: ToolCall, arg: str, region: str | None) -> list[Value | None]:
    """The URL values of an argument (None for a value that is not one readable URL).

    The browser opens the whole value: text around a URL (``see https://a.example``) or
    another scheme wrapping one (``javascript:...//https://a.example``, ``data:...``) is
    not that URL, so it is None (never in scope), whatever URLs are written inside it.
    """
    out: list[Value | None] = []
    for scalar in _values_at(call, arg):
        whole, _ = read_scalar(scalar, region=region)
        out.append(whole if whole is not None and whole.kind == "url" else None)
    return out


def scope_verdict(value: Value | None, scopes: Sequence[Scope], depth: int = 0) -> bool | None:
    """Whether a URL is inside one of the scopes: True, False, or None (readings disagree).

    A URL a scope admits is inside only when every URL it carries (an open redirect's
    target in its query, fragment or path: :func:`~guardagent.trace.found.redirects.carried`)
    is inside one of the scopes too, whatever the scope's query glob (``?status=*`` also
    matches ``status=open&next=https://evil.example``). A URL no scope admits that carries
    a URL some scope may admit, or one that cannot be read (a shortener's), is open (None):
    the browser ends up there, so a rule that forbids the scope must not take it for
    "elsewhere" (``google.com/amp/s/evil.example`` is not outside ``evil.example``).
    """
    if value is None:
        return False
    verdicts = {scope.verdict(value) for scope in scopes}
    if True in verdicts:  # what it carries is judged once, whichever scopes admit it
        verdicts.discard(True)
        inside = _targets_inside(value, scopes, depth)
        if inside is True:
            return True
        verdicts.add(inside)
    elif _lands_inside(value, scopes):
        return None
    return None if None in verdicts else False


def _targets_inside(value: Value, scopes: Sequence[Scope], depth: int) -> bool | None:
    where = url_location(value)
    if where is None:
        return False
    targets = carried(where)
    if not targets:
        return True
    if depth >= MAX_DEPTH:
        return False
    verdicts = {scope_verdict(t, scopes, depth + 1) for t in targets}
    return False if False in verdicts else (None if None in verdicts else True)


def _lands_inside(value: Value, scopes: Sequence[Scope]) -> bool:
    """Whether a URL may send the browser on to a page a scope may admit (or unreadable)."""
    where = url_location(value)
    landings = every_landing(where) if where is not None else []
    return any(t is None or any(s.verdict(t) is not False for s in scopes) for t in landings)


def out_of_scope(
    calls: Iterable[ToolCall], scopes: Sequence[Scope], arg: str, region: str | None
) -> list[tuple[ToolCall, str, bool | None]]:
    """``(call, url, verdict)`` for every URL of the calls' `arg` not inside a scope.

    The verdict is False (outside every scope) or None (inside by one reading of its path
    only: see :meth:`Scope.verdict`).
    """
    out: list[tuple[ToolCall, str, bool | None]] = []
    for call in calls:
        for value in urls_at(call, arg, region):
            verdict = scope_verdict(value, scopes)
            if verdict is not True:
                out.append((call, value.text if value is not None else "(not a URL)", verdict))
    return out


# -- secret flow ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Flow:
    """What of the proposed call comes from `sensitive` tools, and where it goes.

    Attributes:
        leaked: Values found in a sensitive tool's result and in no user message.
        recipients: The call's recipient values with their provenance.
        send: Whether the call's tool has one of the effects that make data leave.
    """

    leaked: tuple[ValueProvenance, ...]
    recipients: tuple[ValueProvenance, ...]
    send: bool

    @property
    def unapproved(self) -> tuple[ValueProvenance, ...]:
        """Recipients not from the user or a trusted source."""
        return tuple(r for r in self.recipients if r.origin not in ("user", "trusted"))

    @property
    def flows(self) -> bool:
        """A sensitive value reaches a send whose recipient is unknown or not trusted."""
        return self.send and bool(self.leaked) and (not self.recipients or bool(self.unapproved))


def secret_flow(search: Search, labels: Labels, effects: Iterable[Effect] = ("send",)) -> Flow:
    """The secret flow of the trace's proposed call (see the module docstring)."""
    call = search.trace.call
    label = labels.label(call.name)
    items = call_values(call, search.region, search.year)
    extra: list[tuple[str, Value, bool]] = []
    wanted = sensitive_tokens(search.trace, labels)  # empty: no result a value can leak from
    held: dict[tuple[str, str], frozenset[int]] = {}  # sensitive messages writing it as a run
    for path, value, runs in encoded_tokens(call, wanted) if wanted else ():
        if runs:
            held[(path, value.text)] = runs
        extra.append((path, value, True))
    candidates = items + extra
    located = search.locate([v for _, v, _ in candidates])
    leaked: list[ValueProvenance] = []
    seen: set[tuple[str, str]] = set()
    for (path, value, inner), (ids, split) in zip(candidates, located, strict=True):
        ident = (path, value.text)
        if ident in seen:
            continue
        seen.add(ident)
        refs = search.refs(ids | held.get(ident, frozenset()))
        if any(r.kind == "user" for r in refs) or (ident in held and wanted.from_user(value.text)):
            continue
        if any(labels.sensitive(r.source) for r in refs):
            leaked.append(ValueProvenance(path, value, inner, refs, split))
    if label.recipients:
        chosen = [
            (p, v, i)
            for p, v, i in items
            if any(p == a or p.startswith((a + "[", a + ".")) for a in label.recipients)
        ]
    else:
        chosen = [(p, v, i) for p, v, i in items if v.kind in RECIPIENT_KINDS]
    found = search.locate([v for _, v, _ in chosen])
    recipients = tuple(
        recipients_read(
            [
                search.provenance(p, v, i, ids, split)
                for (p, v, i), (ids, split) in zip(chosen, found, strict=True)
            ],
            dict(flatten(call.args)),
        )
    )
    return Flow(tuple(leaked), recipients, label.effect in set(effects))
