"""The trace engine: guard a tool call by the whole conversation that led to it.

- :mod:`.messages`: read a trace (LangChain ``messages_to_dict`` JSON or OpenAI chat with
  ``tool_calls``, plus the proposed call) into a typed :class:`Trace`; nothing is cut;
- :mod:`.content`: a message's content parts sorted: the text a chat shows, calls and
  results in Anthropic's shape, and hidden parts (never the user's words);
- :mod:`.labels`: the deployer's tool labels (trusted / untrusted results, sensitive,
  effect read / write / send / irreversible; a proposed call of an unlabelled tool is
  denied, an earlier one's results are untrusted);
- :mod:`.fields`: the fields others write inside a trusted tool's results
  (``untrusted_fields``), split off as untrusted parts;
- :mod:`.values`: type-aware reading and normalisation of e-mails, URLs, IBANs, phone
  numbers, amounts, dates and phrases;
- :mod:`.state`: the per-thread incremental index (hash chain, postings; JSON, small);
- :mod:`.provenance`: which earlier messages contain each value of the proposed call, and
  whether it comes from the user, a trusted source, only untrusted sources, or nowhere;
- :mod:`.temporal`: call patterns, order, counts, navigation scope, secret flow;
- :mod:`.records`: the user's own records (the policy's ``values:``, the host's user
  facts), a trusted source for provenance;
- :mod:`.secrets`: the policy's declared ``secrets:``, found in any argument however
  encoded;
- :mod:`.predicates`: all of it as named predicates with their deciding messages, for a
  policy model;
- :mod:`.guard`: one guarded call prepared for the guard graph (event text, predicate
  values, the thread's new state).

Typical use::

    trace = parse_trace(messages, proposed_call)
    facts = analyze(trace, Labels.load("labels.yaml"), index=TraceIndex.from_json(saved))
    values = facts.assignments({"recipient_untrusted": 'arg_only_untrusted("to")'})
    saved = facts.index.to_json()
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from guardagent.trace.guard import TraceEvent, prepare_trace_event, unreadable_fields
    from guardagent.trace.labels import LabelError, Labels, ToolLabel, labels_from_schemas
    from guardagent.trace.messages import (
        MAX_TRACE_BYTES,
        Message,
        ToolCall,
        Trace,
        load_trace,
        parse_trace,
        render_event,
    )
    from guardagent.trace.predicates import (
        PREDICATES,
        Consent,
        Fact,
        PredicateSpecError,
        TraceFacts,
        analyze,
        compile_bindings,
        facts_json,
        unknown_arguments,
    )
    from guardagent.trace.provenance import CallProvenance, SourceRef, ValueProvenance
    from guardagent.trace.state import MAX_STATE_BYTES, TraceIndex

_HOMES = {
    "TraceEvent": "guard", "prepare_trace_event": "guard", "unreadable_fields": "guard",
    "LabelError": "labels", "Labels": "labels", "ToolLabel": "labels",
    "labels_from_schemas": "labels", "MAX_TRACE_BYTES": "messages", "Message": "messages",
    "ToolCall": "messages", "Trace": "messages", "load_trace": "messages",
    "parse_trace": "messages", "render_event": "messages", "PREDICATES": "predicates",
    "Consent": "predicates", "Fact": "predicates", "PredicateSpecError": "predicates",
    "TraceFacts": "predicates", "analyze": "predicates", "compile_bindings": "predicates",
    "facts_json": "predicates", "unknown_arguments": "predicates",
    "CallProvenance": "provenance", "SourceRef": "provenance",
    "ValueProvenance": "provenance", "MAX_STATE_BYTES": "state", "TraceIndex": "state",
}  # fmt: skip
"""Where each public name lives: modules load on first use, so importing one light module
(``guardagent.trace.labels`` from a policy file) does not pull in the whole engine."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"guardagent.trace.{home}"), name)


__all__ = [
    "MAX_STATE_BYTES",
    "MAX_TRACE_BYTES",
    "PREDICATES",
    "CallProvenance",
    "Consent",
    "Fact",
    "LabelError",
    "Labels",
    "Message",
    "PredicateSpecError",
    "SourceRef",
    "ToolCall",
    "ToolLabel",
    "Trace",
    "TraceEvent",
    "TraceFacts",
    "TraceIndex",
    "ValueProvenance",
    "analyze",
    "compile_bindings",
    "facts_json",
    "labels_from_schemas",
    "load_trace",
    "parse_trace",
    "prepare_trace_event",
    "render_event",
    "unknown_arguments",
    "unreadable_fields",
]
