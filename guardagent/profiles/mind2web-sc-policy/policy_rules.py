# Guard program for SeeAct safety control under the mind2web-sc policy model: the action's
# category and the user's facts (from the agent input only), as predicates.
user = parse_user_info(agent_input)
category = web_action_category(parse_task(agent_input), seeact_final_action(agent_output))
for name, value in mind2web_sc_predicates(category, user).items():
    assign(name, value)
