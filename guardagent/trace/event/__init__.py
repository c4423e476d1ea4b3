"""The trace made a guard event.

The decision's inputs (facts, assignments, the rendered event), a thread state restored and
checked, the task's parameters. The top room: may import every room below, predicates
included.
"""
