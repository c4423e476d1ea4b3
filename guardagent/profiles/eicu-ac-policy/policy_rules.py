# Guard program for EHRAgent access control under the eicu-ac policy model: who asks (from
# the agent input only) and which columns the agent's last code reads, as predicates.
role = parse_identity(agent_input)
accessed = ehr_accessed_columns(agent_output)
for name, value in eicu_ac_predicates(role, accessed).items():
    assign(name, value)
