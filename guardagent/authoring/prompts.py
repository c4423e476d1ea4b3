"""Prompts for turning policy documents into a policy model and refining it.

Kept apart from the logic that validates the answers: the prompts say what JSON to return,
the code (:mod:`guardagent.authoring.extract`, :mod:`guardagent.authoring.optimize`) refuses
anything else and sends the error back. The system prompts start with a fixed phrase each
(``You extract``, ``You refine``, ``You score``) so a test server can tell them apart.
"""

from __future__ import annotations

LOGIC_HELP = """Rule logic is propositional, over predicate names (letters, digits, _):
NOT, AND, OR, IMPLIES, IFF, parentheses, TRUE, FALSE. Typical shapes:
  NOT user_consent IMPLIES NOT publish_data
  export_data IMPLIES manager_approval AND ticket_open
Action predicates (kind "action") are things the agent does (usually a tool call, e.g.
issue_refund); condition predicates (kind "condition") are facts about the user, the data or
the world (e.g. customer_verified). Every name a rule uses must be declared in "predicates"."""

EXTRACT_SYSTEM = f"""You extract verifiable safety policies from an organisation's documents.

For the document section you are given, find every policy that constrains what an agent may
do: who may do what, on which data, under which condition. Ignore background, definitions
that constrain nothing, and history. For each policy return:
- "definition": the policy in one plain sentence;
- "scope": who or what it applies to (the agent, a tool, a kind of data);
- "text": the exact words of the document that state it, copied verbatim (a contiguous
  span of one paragraph, without the bracketed reference);
- "reference": the bracketed reference of the paragraph the text is from, e.g.
  "policy.md#access/customer-records:p2";
- "predicates": the predicates its rules use: name, kind ("action" or "condition"),
  description;
- "rules": one or more rules, each with "logic", optional "remediation" (what the agent can
  do instead) and optional "risk_types" (e.g. "access restriction").

Prefer atomic rules (one action each) and concrete predicates an agent's tool call or the
host's data can decide. Reuse the names of predicates already known when they mean the same.

{LOGIC_HELP}

Answer with JSON only, no prose: {{"policies": [...]}}. A section without policies is
{{"policies": []}}."""

EXTRACT_USER = """Document section: {title}
Section reference: {ref}

Predicates already known (reuse these names when they mean the same thing):
{known}

Section text (each paragraph after its [reference]):

{text}"""

RETRY_USER = """Your answer could not be used:
{errors}

Answer again with corrected JSON only, following the same instructions."""

REFINE_SYSTEM = f"""You refine the rules of a policy model so that each can be verified.

Two refinements are useful:
1. Split a compound rule into atomic rules, e.g. "illegal_content IMPLIES NOT process_content"
   into one rule per concrete action (publish_content, download_content, create_content).
2. Replace a vague predicate by concrete ones, e.g. comply_with_laws by comply_with_GDPR.

Whenever a refinement replaces a predicate, define the old predicate in terms of the new
ones in "definitions" (e.g. {{"process_content": "publish_content OR download_content OR
create_content"}}, {{"comply_with_laws": "comply_with_GDPR"}}). The refined rules must
forbid at least everything the original rule forbids; a refinement that permits more is
refused. Propose nothing for rules that are already atomic and concrete.

{LOGIC_HELP}

Answer with JSON only: {{"proposals": [{{"rule": "<id of the rule refined>",
"definitions": {{"<old predicate>": "<logic over new predicates>"}},
"predicates": [{{"name": ..., "kind": ..., "description": ...}}],
"rules": [{{"logic": ..., "policy": "<the rule in plain words>", "remediation": ...}}]}}]}}.
No refinement: {{"proposals": []}}."""

REFINE_USER = """Predicates:
{predicates}

Rules (id: logic -- policy text -- source text):
{rules}"""

VAGUENESS_SYSTEM = """You score how vague each rule of a policy model is.

A rule is concrete (score near 0) when each of its predicates can be decided from an agent's
tool call or the host's data without judgement (e.g. "export_data IMPLIES manager_approval").
It is vague (score near 1) when deciding a predicate needs interpretation (e.g.
"NOT comply_with_laws IMPLIES NOT store_data"). Answer with JSON only:
{"scores": {"<rule id>": <number between 0 and 1>, ...}} with one score per rule."""

VAGUENESS_USER = """Predicates:
{predicates}

Rules (id: logic -- policy text):
{rules}"""

DERIVE_SYSTEM = f"""You derive a verifiable policy model from a guard request.

A deployer wrote the guard request (the rules an agent must follow) and the specification of
the agent. Turn the request into predicates and rules in the guardagent-policy/1 format, so
that a solver can decide every rule on any event of the agent:
- "predicates": each with "name", "kind" ("action": what the agent does; "condition": a
  fact about the user, the data or the world), "description", and "assign": how it follows
  from an event, either {{"expression": "<expression>"}} or, for an action whose reader
  lists targets (group -> items, e.g. tables -> columns), {{"tool": "<reader>"}} with
  "target": "<group>.<item>" (and "parent": the group's action). An expression is Python
  over `agent_input`, `agent_output` and the toolbox functions listed below only, e.g.
  "parse_user_info(agent_input)['age'] < 18" or
  "web_action_category(parse_task(agent_input), seeact_final_action(agent_output)) == 'car'";
  comparisons, `in`, `and`, `or`, `not`, `.get(...)`, and `any(... for x in ...)` are allowed;
- "rules": each with "id", "logic", and "policy": the text a denial reports for the rule
  (when the request quotes a violation text for it, that exact text), optional "remediation";
- "violations": "rules" (a denial lists the violated rules' policy texts) or "targets" (a
  denial lists the targets read, as {{group: [items]}}).
One rule per requirement of the request; anything the request does not forbid is allowed.

{LOGIC_HELP}

Answer with JSON only: {{"predicates": [...], "rules": [...], "violations": "rules"}}."""

DERIVE_USER = """Guard request:
{guard_request}

Agent specification:
{agent_specification}

Toolbox functions an expression may call (the guard's trusted readers):
{toolbox}"""
