"""Readers: the trusted code that turns a target agent's event into facts.

This package is the guard's trust surface. Each module reads one target agent's events and
states in its docstring what it fails closed on; every reader reports what it could not read
through :func:`guardagent.readers.evidence.unreadable`, which makes the run deny.

- :mod:`.ehragent`: EHRAgent on eICU (its code cells, `Solution:` sections, the paper's
  `Generated code:` layout, fenced blocks; Python via `ast`, SQL via `sqlglot`).
- :mod:`.seeact`: SeeAct web agent (task, user facts, final action) and action categories.
- :mod:`.toolcall`: a pending tool call, in the presentations common agent stacks use.
- :mod:`.call_values`: a call's category and amount arguments, as the shop and bank read them.
- :mod:`.user_facts`: the host's `User information:` block.

Importing this package registers nothing and loads no reader (a reader's parsers, such as
`sqlglot`, load with it, so `guardagent --help` and the low-level helpers here, e.g.
:mod:`.textio`, stay light): :mod:`guardagent.tools.builtins` lists the readers the default
toolbox holds.
"""

from guardagent.readers.evidence import Unreadable, UnreadableEvidence, unreadable

__all__ = ["Unreadable", "UnreadableEvidence", "unreadable"]
