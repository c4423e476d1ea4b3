"""Text primitives the trace's readers share.

Normal forms and tokens, the reading budget, value kinds, nesting limits, message content
and result fields, summaries. The bottom room: imports no other room of the trace.
"""
