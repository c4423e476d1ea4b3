"""`GuardAgent`: the guard graph behind a two-method API."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.graph.builder import build_graph
from guardagent.llm import resolve_model
from guardagent.memory_store.seed import open_memory
from guardagent.profiles.loader import load_profile
from guardagent.runs import ainvoke_guard, invoke_guard


class GuardAgent:
    r"""Guard one target agent's events under one profile.

    Args:
        profile: Built-in profile name or path to a profile YAML/directory.
        model: `"offline"` (default: verified programs only), an `init_chat_model` spec such as
            `"openai:gpt-4o"`, or a `BaseChatModel` instance.
        base_url: OpenAI-compatible endpoint for `model` (vLLM, Ollama `/v1`, llama.cpp).
        **settings: Any other :class:`GuardContext` field (`k`, `max_attempts`,
            `memory_dir`, `memory_url`, `reuse_programs`, `timeout_seconds`).

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
        load_profile(profile)  # fail fast on an unknown or invalid profile
        resolve_model(model, base_url)  # and on a model spec that cannot be built
        self.graph: CompiledStateGraph[Any, Any, Any, Any] = build_graph().compile(
            name="guardagent"
        )

    def warm_up(self) -> None:
        """Open and seed the memory, and load its scan index, now rather than on the first event."""
        memory = open_memory(self.context.profile, self.context.memory_dir, self.context.memory_url)
        memory.load_index()

    def check(self, agent_input: str, agent_output: str, **overrides: Any) -> GuardDecision:
        """Decide whether one event may pass.

        Args:
            agent_input: The target agent's input (the user's request and facts).
            agent_output: The target agent's output log (untrusted).
            **overrides: :class:`GuardContext` fields for this call only.
        """
        return invoke_guard(
            self.graph, replace(self.context, **overrides), agent_input, agent_output,
            run_name="guardagent",
        )  # fmt: skip

    async def acheck(self, agent_input: str, agent_output: str, **overrides: Any) -> GuardDecision:
        """Async :meth:`check`; the sandbox and Chroma calls do not block the event loop."""
        return await ainvoke_guard(
            self.graph, replace(self.context, **overrides), agent_input, agent_output,
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
