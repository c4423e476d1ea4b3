"""Provenance: where each argument value of the proposed call comes from.

Which message, which tool result, which record, over the thread's index. May import the
rooms below (text, found, document, thread).
"""
