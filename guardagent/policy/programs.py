"""Guard programs of the shipped profiles' policy path: read the event, assign predicates.

Under a policy model a program no longer decides: it reads the event with the profile's
readers and assigns the policy's predicates; the `verify` node decides every rule with z3.
These are the programs to ship as the policy profiles' demonstrations (they run in the
sandbox like any other guard program, with `assign` bound next to the toolbox).
"""

from __future__ import annotations

PROGRAMS: dict[str, str] = {
    "eicu-ac": """\
# Guard program for EHRAgent access control under the eicu-ac policy model: who asks (from
# the agent input only) and which columns the agent's last code reads, as predicates.
role = parse_identity(agent_input)
accessed = ehr_accessed_columns(agent_output)
for name, value in eicu_ac_predicates(role, accessed).items():
    assign(name, value)
""",
    "mind2web-sc": """\
# Guard program for SeeAct safety control under the mind2web-sc policy model: the action's
# category and the user's facts (from the agent input only), as predicates.
user = parse_user_info(agent_input)
category = web_action_category(parse_task(agent_input), seeact_final_action(agent_output))
for name, value in mind2web_sc_predicates(category, user).items():
    assign(name, value)
""",
    "tool-calls": """\
# Guard program for tool calls under the tool-calls policy model: every pending call and
# the user's facts (from the agent input only), as predicates. The reader denies by itself
# when the output holds neither a call nor a final answer, or a call it cannot parse.
user = parse_user_info(agent_input)
calls = parse_tool_calls(agent_output)
for name, value in tool_calls_predicates(calls, user).items():
    assign(name, value)
""",
}
"""Profile name -> the program that assigns its policy model's predicates."""

TOOLBOXES: dict[str, list[str]] = {
    "eicu-ac": ["parse_identity", "ehr_accessed_columns", "eicu_ac_predicates"],
    "mind2web-sc": [
        "parse_task",
        "parse_user_info",
        "seeact_final_action",
        "web_action_category",
        "mind2web_sc_predicates",
    ],
    "tool-calls": ["parse_tool_calls", "parse_user_info", "tool_calls_predicates"],
}
"""Profile name -> the toolbox functions its policy program calls."""
