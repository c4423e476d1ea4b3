# ruff: noqa
# mypy: ignore-errors
# (A sandbox guard program: the toolbox and assign() are its globals; it is data, not a module.)
# Guard program for the support agent under its reviewed policy model
# (../support-agent-policy.yaml). Facts about the ticket and the customer come from the
# host's "User information" block only; the pending tool calls from the agent output.
# Every predicate the rules read is assigned; a fact the host did not give stays open
# (None), and z3 then denies when it could decide a hard rule.
user = parse_user_info(agent_input)
calls = parse_tool_calls(agent_output)


def fact(key):
    value = user.get(key)
    return value if isinstance(value, bool) else None


def longest_digit_run(text):
    best = 0
    run = 0
    for ch in text:
        if ch.isdigit():
            run += 1
            best = max(best, run)
        elif ch not in " -":
            run = 0
    return best


names = [str(c.get("name", "")).strip().lower() for c in calls]
for action in ["lookup_customer", "refund", "send_email", "export_data"]:
    assign(action, action in names)

args_of = {}
for call in calls:
    args = call.get("args")
    args_of[str(call.get("name", "")).strip().lower()] = args if isinstance(args, dict) else {}

for key in [
    "ticket_open",
    "identity_verified",
    "manager_approval",
    "dpo_approval",
    "customer_opted_out",
    "comply_with_gdpr",
]:
    assign(key, fact(key))

lookup = args_of.get("lookup_customer")
ticket_customer = user.get("ticket_customer")
if lookup is None:
    assign("customer_on_ticket", None)
else:
    assign(
        "customer_on_ticket",
        ticket_customer is not None and lookup.get("customer_id") == ticket_customer,
    )

refund = args_of.get("refund")
if refund is None:
    assign("refund_over_500", None)
    assign("original_payment_method", None)
else:
    amount = refund.get("amount")
    numeric = isinstance(amount, (int, float)) and not isinstance(amount, bool)
    assign("refund_over_500", amount > 500 if numeric else None)
    assign("original_payment_method", refund.get("method", "original") == "original")

email = args_of.get("send_email")
if email is None:
    assign("sensitive_fields_in_message", None)
    assign("recipient_on_record", None)
    assign("recipient_company_address", None)
else:
    body = str(email.get("subject", "")) + "\n" + str(email.get("body", ""))
    # Card numbers have 13-19 digits; the identity numbers the policy covers at least 9.
    assign("sensitive_fields_in_message", longest_digit_run(body) >= 9)
    to = str(email.get("to", "")).strip().lower()
    record = str(user.get("customer_email", "")).strip().lower()
    domain = str(user.get("company_domain", "")).strip().lower()
    assign("recipient_on_record", bool(record) and to == record)
    assign("recipient_company_address", bool(domain) and to.endswith("@" + domain))

export = args_of.get("export_data")
if export is None:
    assign("export_encrypted", None)
else:
    assign("export_encrypted", export.get("encrypted") is True)
