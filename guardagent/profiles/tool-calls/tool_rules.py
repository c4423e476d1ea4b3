# Guard program for rules over tool calls (general: the rule table is a literal, the event is
# read with toolbox extractors, so the same program guards every event of this request).

# Step 1: the rules of the guard request, as data.
RULES = [
    {"tool": "transfer_funds", "when": [{"arg": "amount", "op": ">", "value": 1000}],
     "field": "verified", "op": "==", "value": True,
     "violation": "Transfers over 1000 require a verified user"},
    {"tool": "delete_file", "field": "role", "op": "==", "value": "admin",
     "violation": "Only admins may delete files"},
    {"tool": "place_order", "when": [{"arg": "category", "op": "==", "value": "alcohol"}],
     "field": "age", "op": ">=", "value": 21,
     "violation": "Users under 21 cannot order alcohol"},
]

# Step 2: the user's facts (from the agent input only) and EVERY pending tool call. The
# reader denies by itself when the output holds neither a call nor a final answer, or a
# call it cannot parse; [] means a readable final answer.
user = parse_user_info(agent_input)
calls = parse_tool_calls(agent_output)

# Steps 3-4: check the rules that cover each call and give the verdict.
if not calls:
    allow("a final answer and no tool call; the rules govern tool calls only")
else:
    violated = []
    broken = []
    for call in calls:
        found = check_tool_rules(call, user, RULES)
        if found:
            broken.append(call["name"] + " breaks: " + "; ".join(found))
        for text in found:
            if text not in violated:
                violated.append(text)
    names = ", ".join([call["name"] for call in calls])
    if violated:
        deny(violated, "the call(s) " + "; ".join(broken))
    else:
        allow("no rule forbids " + names + " for this user")
