"""`GuardAgent`: the guard graph behind a two-method API."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.llm import resolve_model
from guardagent.nodes.runtime import check_settings, memory_of
from guardagent.profiles.loader import load_profile
from guardagent.readers.user_facts import normalize_facts
from guardagent.runs import ainvoke_guard, invoke_guard


class GuardAgent:
    r"""Guard one target agent's events under one profile.

    A `GuardAgent` is the deployment: every setting given here (model, endpoint, memory,
    limits, reuse, profile paths) is used as given. Nothing a guarded agent or its user sends
    can change them; only `check`'s caller can, per call.

    Args:
        profile: Built-in profile name or path to a profile YAML/directory.
        model: `"offline"` (default: verified programs only), an `init_chat_model` spec such as
            `"openai:gpt-4o"`, or a `BaseChatModel` instance.
        base_url: OpenAI-compatible endpoint for `model` (vLLM, Ollama `/v1`, llama.cpp).
        **settings: Any other :class:`GuardContext` field (`k`, `max_attempts`,
            `memory_dir`, `memory_url`, `reuse_programs`, `timeout_seconds`, `profiles`).

    Example:
        ```python
        guard = GuardAgent(profile="eicu-ac")
        decision = guard.check("Identity: nursing\nQuestion: ...", agent_log)
        if not decision.allowed:
            print(decision.violations, decision.reason)
        ```
    """

    def __init__(
        self,
        profile: str = "eicu-ac",
        model: Any = "offline",
        *,
        base_url: str | None = None,
        **settings: Any,
    ) -> None:
        self.context = GuardContext(profile=profile, model=model, base_url=base_url, **settings)
        check_settings(self.context)  # fail fast on limits every run would refuse
        load_profile(profile)  # fail fast on an unknown or invalid profile
        resolve_model(model, base_url)  # and on a model spec that cannot be built
        self.graph: CompiledStateGraph[Any, Any, Any, Any] = build_graph().compile(
            name="guardagent"
        )

    def warm_up(self) -> None:
        """Open and seed the memory, and load its scan index, now rather than on the first event."""
        memory_of(self.context).load_index()

    def _context(self, user_facts: Mapping[str, Any] | None, overrides: Any) -> GuardContext:
        if user_facts is not None:  # checked here: a bad value is the caller's error, loudly
            overrides["user_facts"] = normalize_facts(user_facts)
        return replace(self.context, **overrides) if overrides else self.context

    def check(
        self,
        agent_input: str,
        agent_output: str,
        *,
        user_facts: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GuardDecision:
        """Decide whether one event may pass.

        Args:
            agent_input: The target agent's input (the user's request and facts).
            agent_output: The target agent's output log (untrusted).
            user_facts: The host's facts about the user as data (``{"age": 16, ...}``):
                guard programs get them as they are, types kept, and the input's
                ``User information:`` block is not read. None: the block is read.
            **overrides: :class:`GuardContext` fields for this call only.

        Raises:
            ValueError: `user_facts` that are not a JSON object of JSON values.
        """
        return invoke_guard(
            self.graph, self._context(user_facts, overrides), agent_input, agent_output,
            run_name="guardagent",
        )  # fmt: skip

    async def acheck(
        self,
        agent_input: str,
        agent_output: str,
        *,
        user_facts: Mapping[str, Any] | None = None,
        **overrides: Any,
    ) -> GuardDecision:
        """Async :meth:`check`; the sandbox and Chroma calls do not block the event loop."""
        return await ainvoke_guard(
            self.graph, self._context(user_facts, overrides), agent_input, agent_output,
            run_name="guardagent",
        )  # fmt: skip

    async def acheck_many(
        self, events: list[tuple[str, str]], *, concurrency: int = 8
    ) -> list[GuardDecision]:
        """Check many events with bounded concurrency; results in input order.

        The graph's sync nodes run on the event loop's default executor, whose size caps
        the real concurrency (6 threads on a 2-core machine); size it for `concurrency`
        with `loop.set_default_executor(ThreadPoolExecutor(n))` when the model is slow.
        """
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(event: tuple[str, str]) -> GuardDecision:
            async with gate:
                return await self.acheck(*event)

        return list(await asyncio.gather(*(one(e) for e in events)))
