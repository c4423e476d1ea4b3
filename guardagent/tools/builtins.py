"""The built-in toolbox functions: one explicit list, registered in its own order.

The coder's prompt lists the toolbox grouped, and within a group in registration order, and a
program's sandbox binds it in that order. When each module registered its own functions as it
was imported (`@guard_tool` on the definition), that order, and so the prompt, depended on
which module a process happened to import first. Here the list is written out once: the
modules named below only define their functions, and :func:`register_builtins` adds them.
"""

from __future__ import annotations

import importlib

from guardagent.tools.registry import Toolbox

BUILTINS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("guardagent.readers.call_values", "toolcalls", ("read_call_args",)),
    (
        "guardagent.readers.ehragent",
        "ehr",
        ("parse_identity", "parse_question", "ehr_code", "ehr_accessed_columns"),
    ),
    ("guardagent.readers.user_facts", "facts", ("parse_user_info",)),
    (
        "guardagent.readers.seeact",
        "web",
        ("parse_task", "seeact_final_action", "web_action_category"),
    ),
    ("guardagent.readers.toolcall", "toolcalls", ("parse_tool_calls", "parse_tool_call")),
    ("guardagent.tools.rules", "ehr", ("check_access",)),
    ("guardagent.tools.rules", "web", ("check_rules",)),
    ("guardagent.tools.rules", "toolcalls", ("check_tool_rules",)),
    ("guardagent.tools.text", "text", ("re_search", "re_fullmatch", "re_findall", "format_text")),
    (
        "guardagent.policy.shipped",
        "policy",
        ("eicu_ac_predicates", "mind2web_sc_predicates", "tool_calls_predicates"),
    ),
)
"""(module, group, function names), in the order the toolbox lists them."""


def register_builtins(toolbox: Toolbox) -> None:
    """Add every built-in function to `toolbox`, in :data:`BUILTINS` order.

    A name registered twice for the same function is kept once (:meth:`Toolbox.register`), so
    calling this again is harmless.
    """
    for module_name, group, names in BUILTINS:
        module = importlib.import_module(module_name)
        for name in names:
            toolbox.register(getattr(module, name), name=name, group=group)
