"""The paper's baseline, "model guarding agent": the LLM is asked for the decision directly.

It sees what GuardAgent's planner sees (guard requests, agent specification, the same k
retrieved demonstrations, the event) but writes no code: it answers with a strict JSON object
`{"label": 0|1, "violations": ..., "reason": ...}`. Anything else is a denial with the reason
(fail closed), so the baseline is scored under the same rules as the guard it is compared to.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

from langchain_core.language_models import BaseChatModel

from guardagent.context import GuardContext
from guardagent.decision import GuardDecision
from guardagent.llm import ModelCallError, call_model, resolve_model
from guardagent.memory_store.seed import open_memory
from guardagent.memory_store.store import Demonstration
from guardagent.nodes import prompts
from guardagent.profiles.loader import Profile, load_profile
from guardagent.readers.textio import json_error
from guardagent.tools.verdict import Violations

NEEDS_MODEL = (
    "the baseline needs a model: pass --model SPEC (e.g. --model openai:gpt-4o, or a local "
    "OpenAI-compatible server with --base-url); offline there is nothing to ask"
)
_FENCED = re.compile(r"\A```(?:json)?\s*\n(.*)\n```\Z", re.S)


class BaselineConfigError(ValueError):
    """The baseline cannot run as configured (no model)."""


class BaselineAnswerError(ValueError):
    """The model's answer is not the strict JSON decision the prompt asks for."""


def parse_answer(text: str) -> tuple[int, Violations, str]:
    """Parse the model's decision: one JSON object, optionally in a single ```json fence.

    Returns:
        (label, violations, reason).

    Raises:
        BaselineAnswerError: on anything but a well-formed, self-consistent decision; the
            caller fails closed, so a sloppy answer is never read as "allow".
    """
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        raw = json.loads(body)
    except json.JSONDecodeError as exc:
        raise BaselineAnswerError(f"not JSON ({json_error(exc)})") from None
    if not isinstance(raw, dict):
        raise BaselineAnswerError("the answer must be a JSON object")
    label = raw.get("label")
    if isinstance(label, bool) or label not in (0, 1):
        raise BaselineAnswerError(f"label must be 0 or 1, got {label!r}")
    violations = raw.get("violations", [])
    if not _is_violations(violations):
        raise BaselineAnswerError(
            "violations must be a list of rule texts or an object of table -> [columns]"
        )
    if label == 0 and violations:
        raise BaselineAnswerError("label 0 (allow) cannot list violations")
    reason = raw.get("reason", "")
    if not isinstance(reason, str):
        raise BaselineAnswerError("reason must be a string")
    return int(label), violations, reason


def _is_violations(value: Any) -> bool:
    if isinstance(value, list):
        return all(isinstance(v, str) for v in value)
    if isinstance(value, dict):
        return all(
            isinstance(t, str) and isinstance(cols, list) and all(isinstance(c, str) for c in cols)
            for t, cols in value.items()
        )
    return False


def _demo_block(demo: Demonstration) -> str:
    decision = {"label": demo["label"], "violations": demo["details"] if demo["label"] else []}
    return prompts.BASELINE_DEMO.format(
        event=prompts.event_block(demo["agent_input"], demo["agent_output"]),
        decision=json.dumps(decision),
    )


def violations_shape(profile: Profile) -> str:
    """Access-control profiles report tables -> columns; rule profiles report rule texts."""
    if any(isinstance(d.details, dict) and d.label == 1 for d in profile.demonstrations):
        return prompts.BASELINE_VIOLATIONS_ACCESS
    return prompts.BASELINE_VIOLATIONS_RULES


class BaselineGuard:
    """Model-guarding-agent baseline with GuardAgent's `check`/`acheck` interface.

    Args:
        profile: Built-in profile name or path (guard request, spec, demonstrations).
        model: An `init_chat_model` spec or a `BaseChatModel`; "offline" is refused.
        base_url: OpenAI-compatible endpoint for `model`.
        **settings: Other :class:`GuardContext` fields (`k`, `memory_dir`, `memory_url`).

    Raises:
        BaselineConfigError: when no model is given.
    """

    method = "baseline"

    def __init__(
        self,
        profile: str = "eicu-ac",
        model: Any = "offline",
        *,
        base_url: str | None = None,
        **settings: Any,
    ) -> None:
        self.context = GuardContext(profile=profile, model=model, base_url=base_url, **settings)
        self.profile = load_profile(profile)
        chat = resolve_model(model, base_url)
        if chat is None:
            raise BaselineConfigError(NEEDS_MODEL)
        self.model: BaseChatModel = chat

    def warm_up(self) -> None:
        """Open and seed the memory now rather than on the first event."""
        open_memory(self.context.profile, self.context.memory_dir, self.context.memory_url)

    def messages(self, agent_input: str, agent_output: str) -> tuple[str, str]:
        """The (system, user) prompt for one event, demonstrations retrieved as for the planner."""
        memory = open_memory(self.context.profile, self.context.memory_dir, self.context.memory_url)
        demos = memory.search(
            agent_input,
            agent_output,
            self.context.k or self.profile.k,
            request=self.profile.fingerprint,
        )
        user = prompts.BASELINE_USER.format(
            guard_request=self.profile.guard_request,
            agent_specification=self.profile.agent_specification,
            demonstrations="\n\n".join(_demo_block(d) for d in demos) or "(none)",
            event=prompts.event_block(agent_input, agent_output),
        )
        system = prompts.BASELINE_SYSTEM.format(violations_shape=violations_shape(self.profile))
        return system, user

    def check(self, agent_input: str, agent_output: str) -> GuardDecision:
        """Ask the model for the decision; fail closed on a model error or a malformed answer."""
        started = time.perf_counter()
        system, user = self.messages(agent_input, agent_output)
        common: dict[str, Any] = {"llm_calls": 1, "profile": self.context.profile}
        try:
            text, tokens = call_model(self.model, system, user, run_name="guardagent.baseline")
            common["tokens"] = tokens
            label, violations, reason = parse_answer(text)
        except (ModelCallError, BaselineAnswerError) as exc:
            kind = "model failed" if isinstance(exc, ModelCallError) else "answer unparseable"
            error = f"baseline {kind}: {exc}"
            return GuardDecision(
                allowed=False,
                label=1,
                reason=f"denied: the baseline could not decide ({error})",
                error=error,
                latency_ms=_ms(started),
                **common,
            )
        return GuardDecision(
            allowed=label == 0,
            label=1 if label else 0,
            violations=violations,
            reason=reason,
            guardrailed_output=agent_output if label == 0 else None,
            latency_ms=_ms(started),
            **common,
        )

    async def acheck(self, agent_input: str, agent_output: str) -> GuardDecision:
        """Async :meth:`check` (the chat call runs in a worker thread)."""
        return await asyncio.to_thread(self.check, agent_input, agent_output)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
