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

# Step 2: the user's facts (from the agent input only) and the pending tool call.
user = parse_user_info(agent_input)
call = parse_tool_call(agent_output)

# Steps 3-4: check the rules that cover this call and give the verdict.
if not call["name"]:
    allow("no tool call in this event; the rules govern tool calls only")
else:
    violated = check_tool_rules(call, user, RULES)
    if violated:
        deny(violated, "the call " + call["name"] + " breaks: " + "; ".join(violated))
    else:
        allow("no rule forbids " + call["name"] + " for this user")
