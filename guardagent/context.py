"""Settings of the guard graph: what the deployment sets versus what one run may choose.

Two kinds of settings, from two kinds of callers:

- :class:`GuardContext` holds everything, deployment settings included (model, its endpoint,
  memory location, limits, program reuse, the profiles a run may pick). Only trusted Python
  code builds one: `GuardAgent(...)`, `build_graph(settings)`, the middleware's constructor,
  or :meth:`GuardContext.from_env` for a served graph, from the server's environment.
- :class:`RunContext` is what a run may choose: a *registered* profile name and the host's
  structured facts about the user. It is the served graph's `context_schema`, so LangGraph
  Studio shows only these fields, and it is all that is read from a context dict that a
  client or a host graph passes in.

A served graph's client is attacker-influenced: a `base_url` it chose would receive the
server's API key and supply the program that decides; a `memory_dir` would create a database
anywhere; a profile *path* would read any file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import date
from typing import Any

from guardagent.environment import GUARD_SETTINGS, field_values, iso_date


@dataclass(kw_only=True)
class RunContext:
    """What one run may choose; the served graph's context schema.

    Attributes:
        profile: Name of a profile this deployment serves (the built-in ones and the names
            the deployment registered); None for the deployment's default profile. Never a
            path: a run cannot make the server read a file.
        user_facts: The host's facts about the user for this run (``{"age": 16, ...}``),
            handed to guard programs as data; None to read the agent input's
            ``User information:`` block instead.
    """

    profile: str | None = None
    user_facts: dict[str, Any] | None = None


RUN_KEYS = frozenset(f.name for f in fields(RunContext))
"""The only keys read from a context that did not come from trusted Python code."""


@dataclass(kw_only=True)
class GuardContext:
    """Every setting of a run; every field has a safe default so `GuardContext()` is valid.

    Built only by trusted code (the Python API, or :meth:`from_env` for a served graph); a
    run's client contributes at most the :class:`RunContext` fields.

    Attributes:
        profile: Built-in profile name (`eicu-ac`, `mind2web-sc`, `tool-calls`) or a path to
            a profile: the default profile of the deployment.
        model: `"offline"` (verified programs only, no LLM), an `init_chat_model` spec such as
            `"openai:gpt-4o"`, or a LangChain `BaseChatModel` instance.
        base_url: OpenAI-compatible endpoint (vLLM, Ollama `/v1`, llama.cpp) for `model`.
        k: Demonstrations retrieved per event; `None` uses the profile's default.
        max_attempts: Program runs before failing closed (the paper's debugging budget).
        memory_dir: Directory of the embedded Chroma memory; `None` uses
            `$GUARDAGENT_MEMORY_DIR`, else the user data dir.
        memory_url: `http://host:port` of a Chroma server, to share memory between processes.
        memory_key: Key that signs and checks memory records; `None` uses
            `$GUARDAGENT_MEMORY_KEY`, else (local memory only) the directory's key file.
            Never shown in a repr or a trace.
        reuse_programs: Reuse verified programs from memory instead of calling the model.
        timeout_seconds: Wall-clock limit of one program run in the sandbox.
        profiles: Extra profiles a run may choose by name (name -> profile path), on top of
            the built-in ones.
        max_event_chars: Events whose input plus output is longer are denied with the
            reason before any reader or model sees them (attacker text must not choose the
            path or the cost).
        user_facts: The host's structured facts about the user for this run (see
            :class:`RunContext`); usually passed per call, `check(..., user_facts=...)`.
        max_trace_bytes: Size limit of a trace (`check_trace`): larger ones are denied with
            the reason, never cut.
        trace_assignments: Predicates of the policy model the host assigned from the trace
            (`check_trace`), merged with the program's by `verify`. Set only by trusted
            code, never from a run's client (not a :class:`RunContext` key).
        trace_key: Key that signs a thread's trace state and the reviewers' consent records
            (`check_trace`, the middleware's ``trace=True``); with it, a state or record
            that anyone else wrote is refused. Never shown in a repr or a trace.
        trace_budget_ms: Wall-clock budget of reading one trace (`check_trace`), in
            milliseconds: an event whose reading exhausts it is denied with the reason
            (`trace_budget_exceeded`).
        today: The users' current date (ISO, ``2025-01-09``) for reading year-less dates in
            traces ("June 13"), instead of the host's clock; a trace's own "Today is ..."
            line still wins.
    """

    profile: str = "eicu-ac"
    model: Any = "offline"
    base_url: str | None = None
    k: int | None = None
    max_attempts: int = 3
    memory_dir: str | None = None
    memory_url: str | None = None
    memory_key: str | bytes | None = field(default=None, repr=False)
    reuse_programs: bool = True
    timeout_seconds: float = 5.0
    profiles: dict[str, str] | None = None
    user_facts: dict[str, Any] | None = None
    max_event_chars: int = 1_000_000
    max_trace_bytes: int = 8 * 1024 * 1024
    trace_assignments: dict[str, bool | None] | None = None
    trace_key: str | bytes | None = field(default=None, repr=False)
    trace_budget_ms: int = 2000
    today: str | None = None

    def __post_init__(self) -> None:
        """A default profile named in `profiles` is that registered path ("name or path").

        Resolved here, once, so the served graph, `guardagent serve` and the Python API load
        the same profile a run choosing that name loads (a registered name wins over a
        built-in of the same name there too).
        """
        if isinstance(self.profile, str) and self.profiles and self.profile in self.profiles:
            self.profile = self.profiles[self.profile]
        if self.today is not None:
            iso_date(self.today)  # a bad date fails where it is set, not at the first trace

    @property
    def today_date(self) -> date | None:
        """`today` as a date (None: the host's clock)."""
        return None if self.today is None else iso_date(self.today)

    @property
    def trace_key_bytes(self) -> bytes | None:
        """`trace_key` as bytes (None without one)."""
        key = self.trace_key
        return key.encode("utf-8") if isinstance(key, str) else key

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GuardContext:
        """Deployment settings from `GUARDAGENT_*` variables (the served graph's source).

        `GUARDAGENT_PROFILE`, `_MODEL`, `_BASE_URL`, `_K`, `_MAX_ATTEMPTS`, `_MEMORY_DIR`,
        `_MEMORY_URL`, `_REUSE_PROGRAMS` (true/false), `_TIMEOUT_SECONDS`,
        `_MAX_EVENT_CHARS`, `_MAX_TRACE_BYTES`, `_TRACE_KEY` (the deployment's key that
        signs trace state and consent records; surrounding spaces are dropped),
        `_TRACE_BUDGET_MS` (the time budget of reading one trace), `_TODAY` (the users'
        current date, ISO), and
        `_PROFILES` (``name=path`` pairs separated by commas). Unset or empty variables keep
        the defaults. API keys stay in the provider's own variables (`OPENAI_API_KEY`, ...).

        The variables are the ``guard`` rows of :data:`guardagent.environment.SETTINGS`.

        Raises:
            ValueError: a variable that does not parse, naming it.
        """
        return cls(**field_values("guard", environ))


ENV_NAMES: tuple[str, ...] = tuple(s.name for s in GUARD_SETTINGS)
"""Every variable :meth:`GuardContext.from_env` reads, for readers that snapshot them."""
