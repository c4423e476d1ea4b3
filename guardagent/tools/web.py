"""Former home of the SeeAct reader; it lives in :mod:`guardagent.readers.seeact` now."""

from guardagent.readers.seeact import parse_task, seeact_final_action, web_action_category
from guardagent.readers.user_facts import parse_user_info
from guardagent.tools.rules import check_rules

__all__ = [
    "check_rules", "parse_task", "parse_user_info", "seeact_final_action", "web_action_category",
]  # fmt: skip
