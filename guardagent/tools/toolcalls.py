"""Former home of the tool-call reader; it lives in :mod:`guardagent.readers.toolcall` now."""

from guardagent.readers.toolcall import parse_tool_call, parse_tool_calls
from guardagent.readers.user_facts import parse_user_info
from guardagent.tools.rules import check_tool_rules

__all__ = ["check_tool_rules", "parse_tool_call", "parse_tool_calls", "parse_user_info"]
