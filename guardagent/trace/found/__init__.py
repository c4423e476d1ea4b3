"""Values found in text.

Dates, amounts, links and redirects, addresses, the reading forms of a value, secrets and
their spellings, what a request asks, and who a text addresses (the agent, a model, a
reader) with the parts of a tool result written to the agent. May import
:mod:`guardagent.trace.text`; never the trace's documents, thread state, provenance or
predicates.
"""
