"""The one table of settings read from the process environment, and the one reader of it.

Every environment variable the package reads is a row of :data:`SETTINGS`: its name, how its
text is read, its default, who may set it and which part of the guard reads it. Only
:func:`value` (and :func:`snapshot`) touch `os.environ`; every other module asks for a row's
parsed value, or takes it from :class:`~guardagent.context.GuardContext` /
:class:`~guardagent.service.settings.ServiceSettings`, which fill their fields from the rows
they own. A name kept in one module and a parse kept in another drift apart (the served
graph once ignored four documented limits because its own list of names lacked them); a
table read in one place cannot.

Who may set a row (:data:`SET_BY`) is always the environment of a trusted process, never a
request, a run's context or anything a model or a tool wrote:

- ``deployment``: the environment of the process that runs the guard (a server, the CLI, a
  host that embeds the guard);
- ``host``: the environment of a process that *calls* a guard service (its client's token);
- ``operator``: whoever runs a command by hand (where `guardagent eval` finds its data).

A blank value is unset (the default applies). A value that does not parse raises
`ValueError` naming the variable, never silently falls back to the default: a deployment
that asked for something must get it or stop. A secret's value is never repeated in an
error message.
"""

from __future__ import annotations

import json
import math
import os

# The hook (`check --server`) reads its token here: this module imports neither `typing` nor
# `dataclasses` at run time (about 8 ms of a 35 ms hook); mypy reads the typed branch.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from datetime import date
    from typing import Any, Generic, Literal, TypeVar

    T = TypeVar("T")
    SetBy = Literal["deployment", "host", "operator"]
    Owner = Literal[
        "guard", "service", "sandbox", "memory", "verification", "model", "eval", "demo"
    ]
else:

    class Generic:
        """Stands in for `typing.Generic` at run time: ``Generic[T]`` is the class itself."""

        def __class_getitem__(cls, item: object) -> type:
            return cls

    T = None
ENV_PREFIX = "GUARDAGENT_"
"""Prefix of the package's own variables (providers' keys keep their providers' names)."""
SET_BY: tuple[SetBy, ...] = ("deployment", "host", "operator")


class Setting(Generic[T]):
    """One environment variable.

    Attributes:
        name: The variable's name.
        kind: How its text is read, in words (for the settings page).
        parse: Text (stripped, not blank) -> value; raises `ValueError` saying what is
            expected.
        default: The value when the variable is unset or blank.
        set_by: Whose environment may set it (:data:`SET_BY`).
        owner: What reads it: ``guard`` and ``service`` rows fill the field `field` of
            `GuardContext` / `ServiceSettings` (their docstrings describe them); the others
            are read where they are used.
        summary: One line on what it does, for rows whose meaning no field docstring gives.
        field: The `GuardContext` / `ServiceSettings` attribute it fills, if any.
        secret: A key or token: never shown in an error message.
    """

    __slots__ = (
        "name",
        "kind",
        "parse",
        "default",
        "set_by",
        "owner",
        "summary",
        "field",
        "secret",
    )

    name: str
    kind: str
    parse: Callable[[str], T]
    default: T
    set_by: tuple[SetBy, ...]
    owner: Owner
    summary: str
    field: str | None
    secret: bool

    def __init__(
        self,
        name: str,
        kind: str,
        parse: Callable[[str], T],
        default: T,
        set_by: tuple[SetBy, ...],
        owner: Owner,
        summary: str = "",
        field: str | None = None,
        secret: bool = False,
    ) -> None:
        for attr, given_value in (
            ("name", name),
            ("kind", kind),
            ("parse", parse),
            ("default", default),
            ("set_by", set_by),
            ("owner", owner),
            ("summary", summary),
            ("field", field),
            ("secret", secret),
        ):
            object.__setattr__(self, attr, given_value)

    def __setattr__(self, attr: str, given_value: object) -> None:
        raise AttributeError(f"a setting is read-only ({attr})")

    def __repr__(self) -> str:
        return f"Setting({self.name!r})"


def value(setting: Setting[T], environ: Mapping[str, str] | None = None) -> T:
    """The parsed value of `setting` in `environ` (default: this process's environment).

    Raises:
        ValueError: the value does not parse, naming the variable (and the value unless
            the setting is a secret).
    """
    env = os.environ if environ is None else environ
    raw = (env.get(setting.name) or "").strip()
    if not raw:
        return setting.default
    try:
        return setting.parse(raw)
    except (ValueError, TypeError) as exc:
        shown = setting.name if setting.secret else f"{setting.name}={raw!r}"
        raise ValueError(f"{shown}: {exc}") from None


def given(setting: Setting[Any], environ: Mapping[str, str] | None = None) -> bool:
    """Whether `setting` is set to something other than blanks."""
    env = os.environ if environ is None else environ
    return bool((env.get(setting.name) or "").strip())


def snapshot(settings: tuple[Setting[Any], ...]) -> tuple[str | None, ...]:
    """The raw values of `settings` in this process's environment, as a cache key."""
    return tuple(os.environ.get(s.name) for s in settings)


def field_values(owner: Owner, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`{field: value}` of `owner`'s rows that are set in `environ`, for a settings class.

    Unset rows are left out, so the class's own defaults apply.

    Raises:
        ValueError: a set variable that does not parse, naming it.
    """
    return {
        s.field: value(s, environ)
        for s in SETTINGS
        if s.owner == owner and s.field is not None and given(s, environ)
    }


def positive_int(raw: str) -> int:
    """An integer of at least 1."""
    number = int(raw)
    if number < 1:
        raise ValueError("must be a positive integer")
    return number


def positive_float(raw: str) -> float:
    """A finite number of seconds above 0."""
    number = float(raw)
    if not math.isfinite(number) or number <= 0:
        raise ValueError("must be a positive number of seconds")
    return number


def seconds_or_zero(raw: str) -> float:
    """A number of seconds that may be 0 (none); not negative, not NaN or infinite."""
    return 0.0 if float(raw) == 0 else positive_float(raw)


def flag(raw: str) -> bool:
    """true/false (also 1/0, yes/no, on/off)."""
    lowered = raw.lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError("must be true or false")


def on_unless_zero(raw: str) -> bool:
    """A switch that only ``0`` turns off (the sandbox's, as documented since it shipped)."""
    return raw != "0"


def profile_paths(raw: str) -> dict[str, str]:
    """``name=path`` pairs separated by commas."""
    out: dict[str, str] = {}
    for item in raw.split(","):
        name, sep, path = item.strip().partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ValueError("must be name=path pairs separated by commas")
        out[name.strip()] = path.strip()
    return out


def iso_date(raw: str) -> date:
    """An ISO date (``2025-01-09``)."""
    from datetime import date  # not on the hook's path

    try:
        return date.fromisoformat(raw)
    except (TypeError, ValueError):
        raise ValueError(f"today must be an ISO date (2025-01-09), not {raw!r}") from None


def iso_date_text(raw: str) -> str:
    """An ISO date, kept as its text."""
    iso_date(raw)
    return raw


def nice(raw: str) -> int:
    """An integer, clamped to 0-19."""
    try:
        return max(0, min(19, int(raw)))
    except ValueError:
        raise ValueError("expected an integer from 0 to 19") from None


def json_object(raw: str) -> dict[str, Any]:
    """A JSON object."""
    loaded = json.loads(raw)
    if not isinstance(loaded, dict):
        raise ValueError(f"must be a JSON object, not {type(loaded).__name__}")
    return loaded


def postgres_url(raw: str) -> str:
    """A ``postgresql://`` (or ``postgres://``) URL."""
    if not raw.startswith(("postgresql://", "postgres://")):
        raise ValueError("must be a postgresql:// URL")
    return raw


def text(raw: str) -> str:
    """Any text."""
    return raw


_D: tuple[SetBy, ...] = ("deployment",)


def _guard(
    name: str, kind: str, parse: Callable[[str], Any], default: Any, secret: bool = False
) -> Setting[Any]:
    return Setting(
        ENV_PREFIX + name.upper(), kind, parse, default, _D, "guard", field=name, secret=secret
    )


def _service(
    name: str, kind: str, parse: Callable[[str], Any], default: Any, secret: bool = False
) -> Setting[Any]:
    return Setting(
        ENV_PREFIX + name.upper(), kind, parse, default, _D, "service", field=name, secret=secret
    )


MEMORY_DIR: Setting[str | None] = _guard("memory_dir", "directory", text, None)
SERVICE_TOKEN: Setting[str | None] = Setting(
    "GUARDAGENT_SERVICE_TOKEN",
    "text (secret)",
    text,
    None,
    ("deployment", "host"),
    "service",
    "the bearer token: the service requires it on decision requests, a host's `GuardClient` "
    "sends it",
    field="service_token",
    secret=True,
)
CHROMA_URL: Setting[str | None] = Setting(
    "GUARDAGENT_CHROMA_URL",
    "URL",
    text,
    None,
    _D,
    "service",
    "Chroma server for memory (the guard's `GUARDAGENT_MEMORY_URL`; set one)",
)

GUARD_SETTINGS: tuple[Setting[Any], ...] = (
    _guard("profile", "profile name or path", text, "eicu-ac"),
    _guard("model", "`offline` or a model spec", text, "offline"),
    _guard("base_url", "URL", text, None),
    _guard("k", "integer >= 1", positive_int, None),
    _guard("max_attempts", "integer >= 1", positive_int, 3),
    MEMORY_DIR,
    _guard("memory_url", "URL", text, None),
    _guard("reuse_programs", "true/false", flag, True),
    _guard("timeout_seconds", "seconds > 0", positive_float, 5.0),
    _guard("profiles", "name=path,...", profile_paths, None),
    _guard("max_event_chars", "integer >= 1", positive_int, 1_000_000),
    _guard("max_trace_bytes", "integer >= 1", positive_int, 8 * 1024 * 1024),
    _guard("trace_key", "text (secret)", text, None, secret=True),
    _guard("trace_budget_ms", "integer >= 1", positive_int, 2000),
    _guard("today", "ISO date", iso_date_text, None),
)
"""The guard's deployment settings, one per `GuardContext` field a deployment may set."""

SERVICE_SETTINGS: tuple[Setting[Any], ...] = (
    _service("database_url", "postgresql:// URL (secret)", postgres_url, None, secret=True),
    _service("pool_size", "integer >= 1", positive_int, 8),
    _service("lock_wait_seconds", "seconds > 0", positive_float, 10.0),
    SERVICE_TOKEN,
    _service("service_tokens_file", "file path", text, None),
    _service("max_request_bytes", "integer >= 1", positive_int, 0),
    _service("shutdown_seconds", "seconds > 0", positive_float, 30.0),
    _service("drain_seconds", "seconds >= 0", seconds_or_zero, 10.0),
    _service("request_seconds", "seconds > 0", positive_float, 60.0),
    _service("body_seconds", "seconds > 0", positive_float, 30.0),
    _service("header_seconds", "seconds > 0", positive_float, 10.0),
    _service("max_pending_connections", "integer >= 1", positive_int, 256),
    CHROMA_URL,
)
"""The guard service's own settings (`guardagent serve`), beside the guard's."""

MEMORY_KEY: Setting[str | None] = Setting(
    "GUARDAGENT_MEMORY_KEY",
    "text, >= 16 bytes (secret)",
    text,
    None,
    _D,
    "memory",
    "memory signing key, the same on every process that shares a memory",
    secret=True,
)
SANDBOX_ZYGOTE: Setting[bool] = Setting(
    "GUARDAGENT_SANDBOX_ZYGOTE",
    "`0` turns it off",
    on_unless_zero,
    True,
    _D,
    "sandbox",
    "fork sandboxed runs from a zygote (`0`: every run starts a fresh interpreter)",
)
SANDBOX_WARM: Setting[bool] = Setting(
    "GUARDAGENT_SANDBOX_WARM",
    "`0` turns it off",
    on_unless_zero,
    True,
    _D,
    "sandbox",
    "keep warm workers for trusted programs (`0`: every run forks)",
)
SANDBOX_NICE: Setting[int] = Setting(
    "GUARDAGENT_SANDBOX_NICE",
    "integer, clamped to 0-19",
    nice,
    10,
    _D,
    "sandbox",
    "niceness of the zygote of one-run children (model-written programs); `0` keeps one "
    "zygote at the guard's priority",
)
LLM_TIMEOUT: Setting[float] = Setting(
    "GUARDAGENT_LLM_TIMEOUT",
    "seconds > 0",
    positive_float,
    60.0,
    _D,
    "model",
    "how long one call to a `GUARDAGENT_BASE_URL` model may take",
)
OPENAI_API_KEY: Setting[str] = Setting(
    "OPENAI_API_KEY",
    "text (secret)",
    text,
    "EMPTY",
    _D,
    "model",
    "the key sent to a `GUARDAGENT_BASE_URL` endpoint (the provider's own variable; other "
    "providers read theirs)",
    secret=True,
)
CACHE_DIR: Setting[str | None] = Setting(
    "GUARDAGENT_CACHE_DIR",
    "directory",
    text,
    None,
    _D,
    "verification",
    "where built-in profiles' verification results are cached (`verified/`)",
)
DATA: Setting[str | None] = Setting(
    "GUARDAGENT_DATA",
    "directory",
    text,
    None,
    ("operator",),
    "eval",
    "where `guardagent eval` finds the shipped benchmarks",
)
DEMO_USER_INFO: Setting[dict[str, Any] | None] = Setting(
    "GUARDAGENT_DEMO_USER_INFO",
    "JSON object",
    json_object,
    None,
    _D,
    "demo",
    "the demo agent's user facts",
)

OTHER_SETTINGS: tuple[Setting[Any], ...] = (
    MEMORY_KEY,
    SANDBOX_ZYGOTE,
    SANDBOX_WARM,
    SANDBOX_NICE,
    LLM_TIMEOUT,
    OPENAI_API_KEY,
    CACHE_DIR,
    DATA,
    DEMO_USER_INFO,
)
"""Settings read where they are used (not fields of a settings class)."""

SETTINGS: tuple[Setting[Any], ...] = GUARD_SETTINGS + SERVICE_SETTINGS + OTHER_SETTINGS
"""Every environment variable the package reads."""


def setting(name: str) -> Setting[Any]:
    """The row named `name` (a full variable name).

    Raises:
        KeyError: no such row.
    """
    for row in SETTINGS:
        if row.name == name:
            return row
    raise KeyError(name)
