# Guard program for tool calls under the tool-calls policy model: every pending call and
# the user's facts (from the agent input only), as predicates. The reader denies by itself
# when the output holds neither a call nor a final answer, or a call it cannot parse.
user = parse_user_info(agent_input)
calls = parse_tool_calls(agent_output)
for name, value in tool_calls_predicates(calls, user).items():
    assign(name, value)
