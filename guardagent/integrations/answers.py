"""Final answers and task policies in the middleware (`GuardAgentMiddleware(trace=True)`).

A model message that makes no tool call is the agent's answer to the user. When the
profile's policy labels the pseudo-tool ``respond`` it is an action like any call (issue 20,
item 8): the middleware's ``after_model`` hook guards it with the whole conversation, and a
denied answer never reaches the user: it is replaced (same message id) by a refusal that
says why, or held for a reviewer (``review=``).

The thread's task policy (issue 20, item 7) comes from the host only: the middleware's
``task=``, a task or a callable of the run's runtime (``runtime.context``,
``runtime.execution_info.thread_id``) returning the thread's task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.messages import AIMessage

from guardagent.agent import GuardAgent
from guardagent.decision import GuardDecision
from guardagent.integrations.runner import describe_denial
from guardagent.policy.task import AttachedTask, TaskPolicy
from guardagent.trace.document.messages import FINAL_ANSWER
from guardagent.trace.text.answer_parts import answer_content, delivered_parts

TaskSpec = TaskPolicy | AttachedTask | Mapping[str, Any]
TaskSource = TaskSpec | Callable[[Any], TaskSpec | None] | None
"""The middleware's ``task=``: a task for every thread, or a callable of the runtime."""

ANSWER_REVIEW_TYPE = "guardagent_answer_review"


def labels_respond(guard: GuardAgent) -> bool:
    """Whether the guard's policy labels ``respond`` (final answers are then guarded).

    Read on each answer (the policy is cached by its file's state, so an edited policy
    counts at once); a profile without a trace policy guards no answer.
    """
    from guardagent.policy.runs import profile_policy
    from guardagent.profiles.loader import load_profile

    model = profile_policy(load_profile(guard.context.profile))
    labels = getattr(model, "labels", None)
    return labels is not None and FINAL_ANSWER in labels.tools


def final_answer(state: Any) -> AIMessage | None:
    """The state's last message when it is a model message making no tool call."""
    messages = state.get("messages") if isinstance(state, Mapping) else None
    last = messages[-1] if messages else None
    if isinstance(last, AIMessage) and not last.tool_calls:
        return last
    return None


def delivered(message: AIMessage) -> str:
    """An answer as the guard reads it: its text, then the other parts the client receives.

    An image's URL or a file reaches the client too (:mod:`guardagent.trace.text.answer_parts`):
    the guard and a reviewer read them with the text.
    """
    return answer_content(str(message.text), delivered_parts(message.content))


def thread_of_runtime(runtime: Any) -> str | None:
    """The checkpointer's thread id of a run (None without a checkpointer)."""
    info = getattr(runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread is None:
        config = getattr(runtime, "config", None)
        configurable = config.get("configurable") if isinstance(config, Mapping) else None
        thread = configurable.get("thread_id") if isinstance(configurable, Mapping) else None
    return str(thread) if thread is not None else None


def task_for(source: TaskSource, runtime: Any, profile: str) -> TaskSpec | GuardDecision | None:
    """The thread's task, or the denial of a task callable that failed (fail closed)."""
    if not callable(source):
        return source
    try:
        return source(runtime)
    except Exception as exc:  # the host's callable: its failure denies, never raises
        reason = f"the task callable failed: {type(exc).__name__}: {exc}"
        return GuardDecision(
            allowed=False,
            label=1,
            profile=profile,
            reason=f"denied: {reason}",
            error=f"task_policy: {reason}",
        )


def refusal(message: AIMessage, decision: GuardDecision, note: str = "") -> AIMessage:
    """The denied answer replaced (same id): the user reads why, never the answer itself."""
    text = f"GuardAgent withheld this answer: {describe_denial(decision)}"
    if decision.remediation is not None:
        text += f" {decision.remediation.summary()}"
    return AIMessage(content=text + note, id=message.id, name=message.name)


def answer_review(message: AIMessage, decision: GuardDecision) -> dict[str, Any]:
    """The interrupt value asking a reviewer about a denied answer (JSON)."""
    return {
        "type": ANSWER_REVIEW_TYPE,
        "final_answer": {"content": delivered(message), "id": message.id},
        "decision": decision.model_dump(
            mode="json", include={"allowed", "violations", "reason", "error", "profile"}
        ),
        "question": f"GuardAgent denied the agent's answer ({describe_denial(decision)}). "
        "Send it anyway?",
        "options": ["approve", "reject"],
    }
