"""A demo `create_agent` agent guarded by GuardAgentMiddleware, runnable offline in Studio.

`langgraph.json` serves it as ``demo_agent``. The model is a small deterministic script (no
LLM, no network), so the graph runs anywhere `langgraph dev` runs; swap in a real chat model
to try it for real. Try, in Studio or with the SDK::

    {"messages": [{"role": "user", "content": "send 2500 to acct-9"}]}

The guard (profile ``tool-calls``) blocks the transfer (unverified user, over 1000);
``"what is the balance of checking"`` always runs.

Who the user is belongs to the deployment, not to the client that sends the messages: the
facts come from the server's environment, ``GUARDAGENT_DEMO_USER_INFO`` (a JSON object,
default ``{"verified": false}``); start the server with
``GUARDAGENT_DEMO_USER_INFO='{"verified": true}'`` to see the transfer run. A real host takes
them from its authenticated session; a client's input or context cannot set them here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from guardagent.environment import DEMO_USER_INFO, value
from guardagent.integrations.middleware import GuardAgentMiddleware
from guardagent.readers.user_facts import normalize_facts

_TRANSFER = re.compile(
    r"\b(?:send|transfer|pay|wire)\s+\$?(?P<amount>\d+(?:\.\d+)?)\s*(?:dollars|usd|eur)?\s+"
    r"to\s+(?P<to>[\w.@-]+)",
    re.I,
)
_BALANCE = re.compile(r"\bbalance\b(?:\s+(?:of|on|for)\s+(?:my\s+)?(?P<account>[\w-]+))?", re.I)


class ScriptedBankModel(BaseChatModel):
    """Deterministic stand-in for an LLM: reads the last message and picks a tool or answers.

    Stateless on purpose: the server runs many threads through one instance.
    """

    @property
    def _llm_type(self) -> str:
        return "guardagent-demo-scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedBankModel:
        """Tools are known by name from the script; binding changes nothing."""
        return self

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else HumanMessage("")
        if isinstance(last, ToolMessage):
            if last.status == "error":
                return AIMessage(f"I did not do that. {last.text}")
            return AIMessage(f"Done: {last.text}")
        text = last.text if isinstance(last, HumanMessage) else ""
        call_id = f"call-{len(messages)}"
        if found := _TRANSFER.search(text):
            args: dict[str, Any] = {"amount": float(found["amount"]), "to": found["to"]}
            return AIMessage(
                "", tool_calls=[{"name": "transfer_funds", "args": args, "id": call_id}]
            )
        if found := _BALANCE.search(text):
            account = found["account"] or "checking"
            return AIMessage(
                "",
                tool_calls=[
                    {"name": "lookup_balance", "args": {"account": account}, "id": call_id}
                ],
            )
        return AIMessage("I can send money ('send 50 to acct-1') or look up a balance.")

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])


@tool
def transfer_funds(amount: float, to: str) -> str:
    """Send `amount` from the user's account to the account `to` (demo: nothing moves)."""
    return f"sent {amount:.2f} to {to}"


@tool
def lookup_balance(account: str) -> str:
    """The balance of one of the user's accounts (demo: a fixed figure)."""
    return f"{account}: 4210.55"


def deployment_user_info() -> dict[str, Any]:
    """The demo user's facts, from the server's environment (`GUARDAGENT_DEMO_USER_INFO`).

    Raises:
        ValueError: the variable is not a JSON object of facts.
    """
    facts = value(DEMO_USER_INFO)
    if facts is None:
        return {"verified": False}
    try:
        return normalize_facts(facts)
    except ValueError as exc:
        raise ValueError(f"{DEMO_USER_INFO.name}: {exc}") from None


def build_demo_agent(**middleware_settings: Any) -> Any:
    """The demo agent; `middleware_settings` go to :class:`GuardAgentMiddleware`.

    The user's facts default to :func:`deployment_user_info`, so neither the client's input
    nor its context can say who the user is.
    """
    middleware_settings.setdefault("user_info", deployment_user_info())
    return create_agent(
        ScriptedBankModel(),
        [transfer_funds, lookup_balance],
        middleware=[GuardAgentMiddleware("tool-calls", **middleware_settings)],
        name="guardagent-demo",
    )


agent = build_demo_agent()
