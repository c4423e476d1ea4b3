"""The guard service: one HTTP guard for every hook, any number of replicas on one Postgres.

`guardagent serve` runs :mod:`guardagent.service.app`; hooks reach it with
`guardagent check --server URL` or :class:`guardagent.service.client.GuardClient`. This
package's ``__init__`` imports nothing, so the client stays as light as the interpreter.
"""
