"""The guard's two ways to a decision, below `GuardAgent` and the integrations.

- :mod:`.runs`: one event through the compiled guard graph, named and traced alike wherever
  it starts (`GuardAgent.check`, the middleware, `guard_node`, the evaluation runner);
- :mod:`.tool_calls`: a proposed tool call decided from the whole conversation before it
  (`GuardAgent.check_trace`): the trace read under the profile's policy model, verified
  here when every predicate is a trace predicate, else handed to the graph.

May import the graph's nodes and everything below them (the trace's readers, policy
models, decisions); never the front ends (`agent`, `integrations`, `cli`, `service`).
"""
