"""Settings a run may choose versus settings only the deployment sets (issue 11, item 1).

A served graph's client, or a host graph that embeds the guard and passes its own context
dict, may choose a registered profile *name* (and the run's user facts); the model, its
endpoint, the memory location, the limits and reuse are the deployment's, from the Python API
or the server's environment (`GUARDAGENT_*`), never from the run's context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from guardagent import GuardAgent, GuardDecision, build_graph
from guardagent.context import GuardContext
from guardagent.profiles import loader
from tests.openai_stub import OpenAIStub
from tests.test_graph_llm import HOTEL_INPUT, HOTEL_OUTPUT

BUILTINS = ("eicu-ac", "mind2web-sc", "tool-calls")
RULE_HOTEL = "User aged under 18 cannot book a hotel"


class Host(TypedDict, total=False):
    """A host that shares the guard's keys and passes its own context dict to the guard."""

    agent_input: str
    agent_output: str
    guard_decision: GuardDecision


def _host() -> Any:
    host = StateGraph(Host)
    host.add_node("guard", build_graph().compile())
    host.add_edge(START, "guard")
    return host.compile()


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The deployment's environment: its own memory directory and its own API key."""
    memory = tmp_path / "deployment-memory"
    for name in (
        "GUARDAGENT_MODEL",
        "GUARDAGENT_BASE_URL",
        "GUARDAGENT_PROFILE",
        "GUARDAGENT_PROFILES",
        "GUARDAGENT_MEMORY_URL",
        "GUARDAGENT_REUSE_PROGRAMS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GUARDAGENT_MEMORY_DIR", str(memory))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-deployment-secret")
    return memory


def test_host_context_cannot_choose_model_endpoint_memory_or_reuse(
    deployment: Path, tmp_path: Path
) -> None:
    """The embedded guard reads only run-choosable keys from the host's context dict."""
    elsewhere = tmp_path / "client-chosen-memory"
    with OpenAIStub(programs=["```python\nallow('stub says yes')\n```"]) as stub:
        out = _host().invoke(
            {"agent_input": HOTEL_INPUT, "agent_output": HOTEL_OUTPUT},
            context={
                "profile": "mind2web-sc",
                "model": "openai:gpt-4o-mini",
                "base_url": stub.base_url,
                "memory_dir": str(elsewhere),
                "reuse_programs": False,
                "max_attempts": 50,
                "timeout_seconds": 600,
            },
        )
        assert stub.count == 0, "a request reached the client-chosen endpoint"
    decision = out["guard_decision"]
    assert decision.allowed is False and decision.violations == [RULE_HOTEL]
    assert decision.program_source == "memory" and decision.llm_calls == 0
    assert not elsewhere.exists()  # (the shipped program decided: no memory was needed)


def test_client_profile_path_is_refused_without_reading_it(
    deployment: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret.yaml"
    secret.write_text("TOP-SECRET-VALUE: [not a profile\n")
    resolved: list[str] = []
    real = loader._resolve

    def spy(name_or_path: str) -> Path:
        resolved.append(name_or_path)
        return real(name_or_path)

    monkeypatch.setattr(loader, "_resolve", spy)
    for chosen in (str(secret), str(tmp_path), "../secret.yaml", "no-such-profile"):
        out = _host().invoke(
            {"agent_input": HOTEL_INPUT, "agent_output": HOTEL_OUTPUT}, context={"profile": chosen}
        )
        decision = out["guard_decision"]
        assert decision.allowed is False and decision.label == 1
        assert "TOP-SECRET" not in decision.reason and "TOP-SECRET" not in (decision.error or "")
        assert all(name in decision.reason for name in BUILTINS), decision.reason
        assert "not a profile this deployment serves" in decision.reason
    assert not [r for r in resolved if "secret" in r or r == str(tmp_path)]


def test_registered_profile_names_come_from_the_deployment(
    deployment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`GUARDAGENT_PROFILES` registers extra names; a client picks the name, not the path."""
    hotel = Path(loader.BUILTIN_DIR) / "mind2web-sc"
    monkeypatch.setenv("GUARDAGENT_PROFILES", f"hotels={hotel}")
    out = _host().invoke(
        {"agent_input": HOTEL_INPUT, "agent_output": HOTEL_OUTPUT}, context={"profile": "hotels"}
    )
    assert out["guard_decision"].violations == [RULE_HOTEL]
    out = _host().invoke(
        {"agent_input": HOTEL_INPUT, "agent_output": HOTEL_OUTPUT}, context={"profile": str(hotel)}
    )
    assert out["guard_decision"].allowed is False
    assert "hotels" in out["guard_decision"].reason  # listed among the names a run may use


def test_served_graph_schema_holds_only_run_choices(deployment: Path) -> None:
    from guardagent.integrations.server import graph

    schema = graph.get_context_jsonschema()
    assert set(schema["properties"]) == {"profile", "user_facts"}
    out = graph.invoke(
        {"agent_input": HOTEL_INPUT, "agent_output": HOTEL_OUTPUT},
        context={"profile": "mind2web-sc"},
    )
    assert out["guard_decision"].violations == [RULE_HOTEL]
    with pytest.raises(TypeError, match="base_url"):  # in-process: refused loudly
        graph.invoke(
            {"agent_input": HOTEL_INPUT, "agent_output": HOTEL_OUTPUT},
            context={"profile": "mind2web-sc", "base_url": "http://127.0.0.1:9/v1"},
        )


def test_deployment_settings_from_the_environment() -> None:
    env = {
        "GUARDAGENT_PROFILE": "tool-calls",
        "GUARDAGENT_MODEL": "openai:gpt-4o-mini",
        "GUARDAGENT_BASE_URL": "http://127.0.0.1:8000/v1",
        "GUARDAGENT_K": "2",
        "GUARDAGENT_MAX_ATTEMPTS": "4",
        "GUARDAGENT_MEMORY_DIR": "/srv/guard/memory",
        "GUARDAGENT_MEMORY_URL": "http://chroma:8000",
        "GUARDAGENT_REUSE_PROGRAMS": "false",
        "GUARDAGENT_TIMEOUT_SECONDS": "2.5",
        "GUARDAGENT_PROFILES": "a=/p/a, b=/p/b",
    }
    ctx = GuardContext.from_env(env)
    assert ctx == GuardContext(
        profile="tool-calls",
        model="openai:gpt-4o-mini",
        base_url="http://127.0.0.1:8000/v1",
        k=2,
        max_attempts=4,
        memory_dir="/srv/guard/memory",
        memory_url="http://chroma:8000",
        reuse_programs=False,
        timeout_seconds=2.5,
        profiles={"a": "/p/a", "b": "/p/b"},
    )
    assert GuardContext.from_env({}) == GuardContext()
    for bad in (
        {"GUARDAGENT_K": "many"},
        {"GUARDAGENT_REUSE_PROGRAMS": "maybe"},
        {"GUARDAGENT_PROFILES": "no-equals-sign"},
        {"GUARDAGENT_TIMEOUT_SECONDS": "-1"},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            GuardContext.from_env(bad)


def test_python_api_keeps_every_setting(tmp_path: Path) -> None:
    """`GuardAgent(...)` is the deployment: its memory_dir, model and profile path are used."""
    memory = tmp_path / "api-memory"
    guard = GuardAgent(str(Path(loader.BUILTIN_DIR) / "mind2web-sc"), memory_dir=str(memory))
    decision = guard.check(HOTEL_INPUT, HOTEL_OUTPUT)
    assert decision.violations == [RULE_HOTEL]
    guard.warm_up()  # opens the deployment's memory (a shipped program needs none to decide)
    assert memory.exists()


def test_settings_bound_to_a_graph_apply_to_untrusted_contexts() -> None:
    """`bind_settings` (what `build_graph(settings)` uses): the host's dict adds only choices."""
    from langgraph.runtime import Runtime

    from guardagent.nodes.runtime import bind_settings, context_of

    seen: list[GuardContext] = []

    def node(state: Host, runtime: Runtime[Any]) -> dict[str, Any]:
        seen.append(context_of(runtime))
        return {}

    deployment = GuardContext(profile="tool-calls", memory_dir="/srv/guard", max_attempts=2)
    graph = StateGraph(Host)
    graph.add_node("n", bind_settings(deployment)(node))
    graph.add_edge(START, "n")
    compiled = graph.compile()
    compiled.invoke(
        {"agent_input": "x"},
        context={"profile": "mind2web-sc", "memory_dir": "/tmp/evil", "max_attempts": 99},
    )
    compiled.invoke({"agent_input": "x"})
    trusted = GuardContext(profile="eicu-ac", memory_dir="/python/caller")
    compiled.invoke({"agent_input": "x"}, context=trusted)
    assert [(c.profile, c.memory_dir, c.max_attempts) for c in seen] == [
        ("mind2web-sc", "/srv/guard", 2),
        ("tool-calls", "/srv/guard", 2),
        ("eicu-ac", "/python/caller", 3),
    ]


def test_settings_every_run_would_refuse_fail_at_construction() -> None:
    with pytest.raises(ValueError, match="timeout_seconds"):
        GuardAgent("tool-calls", timeout_seconds=3600)
    with pytest.raises(ValueError, match="JSON object"):
        GuardAgent("tool-calls").check("Task: x", "y", user_facts=["not", "facts"])  # type: ignore[arg-type]


@pytest.mark.parametrize("through", ["environment", "python"])
def test_the_default_profile_may_be_a_registered_name(tmp_path: Path, through: str) -> None:
    """`GUARDAGENT_PROFILE` is a "name or path": a name registered in `GUARDAGENT_PROFILES` too.

    The served graph, `guardagent serve` and `GuardAgent(...)` load the registered path; a
    registered name wins over a built-in of the same name, as it does for a run's choice.
    """
    mine = str(Path(loader.BUILTIN_DIR) / "mind2web-sc")
    if through == "environment":
        ctx = GuardContext.from_env(
            {"GUARDAGENT_PROFILE": "mine", "GUARDAGENT_PROFILES": f"mine={mine}"}
        )
    else:
        ctx = GuardContext(profile="mine", profiles={"mine": mine})
    assert ctx.profile == mine
    assert GuardContext(profile="eicu-ac", profiles={"eicu-ac": mine}).profile == mine
    assert GuardContext(profile="eicu-ac", profiles={"x": mine}).profile == "eicu-ac"
    guard = GuardAgent(ctx.profile, profiles=ctx.profiles, memory_dir=str(tmp_path / "m"))
    decision = guard.check(HOTEL_INPUT, HOTEL_OUTPUT)
    assert decision.violations == [RULE_HOTEL]


def test_the_served_graph_reads_every_setting_the_environment_table_has(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The served graph's settings are GuardContext.from_env's (one table, issue 36, item 1).

    It used to read a list of its own that had drifted: a 229-character event passed a
    deployment whose GUARDAGENT_MAX_EVENT_CHARS was 50, and it had no trace key.
    """
    from guardagent.nodes.runtime import deployment_settings

    monkeypatch.setenv("GUARDAGENT_MAX_EVENT_CHARS", "50")
    monkeypatch.setenv("GUARDAGENT_TRACE_KEY", "k-123")
    monkeypatch.setenv("GUARDAGENT_MAX_TRACE_BYTES", "4096")
    monkeypatch.setenv("GUARDAGENT_TRACE_BUDGET_MS", "700")
    monkeypatch.setenv("GUARDAGENT_TODAY", "2031-03-04")
    ctx = deployment_settings()
    assert (
        ctx.max_event_chars,
        ctx.trace_key,
        ctx.max_trace_bytes,
        ctx.trace_budget_ms,
        ctx.today,
    ) == (50, "k-123", 4096, 700, "2031-03-04")


def test_the_docs_settings_table_lists_every_setting_the_code_reads() -> None:
    """One table of settings in the code (`context.ENV_NAMES`), and the docs' says the same.

    The settings page is generated from the code when the site is built; each variable must
    also be described (a setting added without a line in `GuardContext`'s docstring fails).
    """
    import re

    from guardagent.context import ENV_NAMES
    from tests.docs_blocks import ROOT, expand

    page = expand((ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8"))
    rows = dict(re.findall(r"^\| `(GUARDAGENT_[A-Z_]+)` \| ([^|]*) \|", page, flags=re.M))
    assert set(ENV_NAMES) <= set(rows), sorted(set(ENV_NAMES) - set(rows))
    assert all(rows[name].strip() for name in ENV_NAMES), [
        n for n in ENV_NAMES if not rows[n].strip()
    ]


def test_the_docs_settings_table_lists_every_service_setting() -> None:
    """Every variable `ServiceSettings.from_env` reads is on the settings page, described."""
    import dataclasses
    import re

    from guardagent.service import settings as service
    from tests.docs_blocks import ROOT, expand

    page = expand((ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8"))
    rows = dict(re.findall(r"^\| `(GUARDAGENT_[A-Z_]+)` \| ([^|]*) \|", page, flags=re.M))
    from guardagent.environment import SERVICE_SETTINGS

    read = {s.name[len("GUARDAGENT_") :] for s in SERVICE_SETTINGS}
    # a derived field (init=False, e.g. the tokens file's grants) has no variable of its own
    fields = {f.name.upper() for f in dataclasses.fields(service.ServiceSettings) if f.init} - {
        "GUARD"
    }
    assert fields <= read, "every ServiceSettings field is a row of the settings table"
    for name in read | fields:
        assert rows.get("GUARDAGENT_" + name, "").strip(), name
