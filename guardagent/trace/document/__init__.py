"""The trace as a document.

Its shapes (messages, tool calls), the reader that parses a trace in any accepted format,
tool labels and declared values, the hash chain of messages and the cache a thread resumes
from. May import :mod:`guardagent.trace.text` and :mod:`guardagent.trace.found` (a
message reads which parts of a tool result address the agent); never thread state,
provenance or predicates.
"""
