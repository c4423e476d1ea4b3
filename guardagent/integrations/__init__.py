"""GuardAgent inside LangChain and LangGraph: agent middleware and a host-graph node.

- :class:`GuardAgentMiddleware`: guards each tool call of a `langchain.agents.create_agent`
  agent (optionally pausing for a human with `interrupt`).
- :func:`guard_node`: a node for any host `StateGraph` whose state differs from the guard's.
- :mod:`guardagent.integrations.events`: the shared event format for tool calls and answers.
"""

from guardagent.integrations.events import answer_event, tool_call_event
from guardagent.integrations.middleware import GuardAgentMiddleware, GuardedAgentState
from guardagent.integrations.subgraph import guard_node, messages_to_events

__all__ = [
    "GuardAgentMiddleware",
    "GuardedAgentState",
    "answer_event",
    "guard_node",
    "messages_to_events",
    "tool_call_event",
]
