"""A thread's index.

What each message says, read once and kept in the signed thread state between calls, with
its size bounds and the signed state's text form. May import the rooms below (text, found,
document).
"""
