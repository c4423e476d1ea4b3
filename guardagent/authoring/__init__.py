"""Policy authoring: the tools that write policy models, apart from the guard's runtime.

The guard decides with :mod:`guardagent.policy` (the model, its grammar, z3, verification,
remediation, safety probability). Writing a policy model is a different job, done here:

- :mod:`.documents`: policy documents as sections with stable references;
- :mod:`.extract`: `policy extract`, documents -> a policy model citing its sources;
- :mod:`.answers`, :mod:`.prompts`, :mod:`.replay`: asking a model for validated JSON, the
  prompts, and a recorded model for offline runs;
- :mod:`.optimize`: `policy optimize`, verifiability refinement and redundancy pruning;
- :mod:`.review`: human sign-off and policy diffs;
- :mod:`.derive`: rules derived from a profile's guard request (the oracle of a profile with
  no table and no policy model);
- :mod:`.cli`: the `guardagent policy` command group.

"""
