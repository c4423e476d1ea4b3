"""remember: a generated program decides only once it verifies; then it is kept for reuse."""

from __future__ import annotations

import logging

from langgraph.runtime import Runtime

from guardagent.context import GuardContext
from guardagent.memory_store.store import Demonstration, demonstration_id
from guardagent.nodes.runtime import context_of, memory_of, profile_of
from guardagent.nodes.state import GuardState
from guardagent.nodes.steps import Steps, async_node, sync_node
from guardagent.policy.runs import decision_parts
from guardagent.profiles.verification import known_problems, program_problems, summarize
from guardagent.twins import in_thread

log = logging.getLogger(__name__)

UNVERIFIED = "the generated program did not verify on the profile's demonstrations"


def remember_steps(state: GuardState, runtime: Runtime[GuardContext]) -> Steps:
    """Verify the program the model just wrote; deny if it fails, else store it for reuse.

    A model-written program is attacker-influenced (the event it was written for is in its
    prompt), so its verdict on this event counts only if the program reproduces every
    labelled demonstration of the guard request (and passes the rest of
    :func:`~guardagent.profiles.verification.program_problems`). Otherwise the event is denied with
    the reason, whether or not programs are reused. A verified program is stored with the
    event it decided (labelled by its verdict: its own, or the policy model's on the
    predicates it assigned) so later events run it with no LLM call.
    """
    ctx = context_of(runtime)
    execution = state.get("execution")
    policy = state.get("policy_verdict")
    if execution is None or (execution["verdict"] is None and policy is None):
        return {}  # nothing decided: `decide` denies with the reason
    profile = profile_of(ctx)
    program = state.get("program", "")
    problems = known_problems(program, profile)
    if problems is None:  # a new program: verified in a thread (it runs many sandbox children)
        problems = yield in_thread(program_problems, program, profile)
    if problems:
        return {"error": f"{UNVERIFIED}: {summarize(problems)}"}
    if not ctx.reuse_programs:
        return {}
    # A predicate program's decision is the `verify` node's (with its own verdict, if any).
    verdict = decision_parts(policy, execution["verdict"]) if policy else execution["verdict"]
    allowed = bool(verdict and verdict["allowed"])
    details = verdict["violations"] if verdict else []
    demo = Demonstration(
        id="",
        agent_input=state["agent_input"],
        agent_output=state["agent_output"],
        plan=state.get("plan", ""),
        code=program,
        label=0 if allowed else 1,
        details=details,
        request_fingerprint=profile.fingerprint,
        verified=True,
    )
    demo["id"] = demonstration_id(demo)
    try:
        yield in_thread(lambda: memory_of(ctx).add([demo]))  # a write: the node's wait
    except Exception:  # noqa: BLE001 - the decision stands; only the reuse is lost
        log.warning("could not store a verified program in memory", exc_info=True)
    return {}


remember = sync_node(remember_steps)
aremember = async_node(remember_steps)
