"""The trace engine: guard a tool call by the whole conversation that led to it.

Its modules sit in rooms that show the flow, bottom to top (each imports only the rooms
below it; an import-linter contract in pyproject.toml keeps the order): ``text`` (normal
forms, tokens, budget, fields), ``found`` (values, dates, links, secrets, requests, who a
text addresses), ``document`` (the parsed trace, labels, hash chain), ``thread`` (the
signed per-thread index), ``sources`` (provenance of each argument value), ``predicates``
and ``event`` (the guard event). The main ones:

- :mod:`.document.messages`: read a trace (LangChain ``messages_to_dict`` JSON or OpenAI chat with
  ``tool_calls``, plus the proposed call) into a typed :class:`Trace`; nothing is cut;
- :mod:`.text.content`: a message's content parts sorted: the text a chat shows, calls and
  results in Anthropic's shape, and hidden parts (never the user's words);
- :mod:`.document.labels`: the deployer's tool labels (trusted / untrusted results, sensitive,
  effect read / write / send / irreversible; a proposed call of an unlabelled tool is
  denied, an earlier one's results are untrusted);
- :mod:`.text.fields`: the fields others write inside a trusted tool's results
  (``untrusted_fields``), split off as untrusted parts;
- :mod:`.found.values`: type-aware reading and normalisation of e-mails, URLs, IBANs, phone
  numbers, amounts, dates and phrases;
- :mod:`.thread.state`: the per-thread incremental index (hash chain, postings; JSON, small);
- :mod:`.sources.provenance`: which earlier messages contain each value of the proposed call, and
  whether it comes from the user, a trusted source, only untrusted sources, or nowhere;
- :mod:`.sources.temporal`: call patterns, order, counts, navigation scope, secret flow;
- :mod:`.sources.records`: the user's own records (the policy's ``values:``, the host's user
  facts), a trusted source for provenance;
- :mod:`.found.secrets`: the policy's declared ``secrets:``, found in any argument however
  encoded;
- :mod:`.predicates`: all of it as named predicates with their deciding messages, for a
  policy model;
- :mod:`.event.guard`: one guarded call prepared for the guard graph (event text, predicate
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
    from guardagent.trace.document.labels import LabelError, Labels, ToolLabel, labels_from_schemas
    from guardagent.trace.document.messages import (
        MAX_TRACE_BYTES,
        load_trace,
        parse_trace,
        render_event,
    )
    from guardagent.trace.document.shapes import Message, ToolCall, Trace
    from guardagent.trace.event.guard import TraceEvent, prepare_trace_event, unreadable_fields
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
    from guardagent.trace.sources.provenance import CallProvenance, SourceRef, ValueProvenance
    from guardagent.trace.thread.state import MAX_STATE_BYTES, TraceIndex

_HOMES = {
    "TraceEvent": "event.guard",
    "prepare_trace_event": "event.guard",
    "unreadable_fields": "event.guard",
    "LabelError": "document.labels",
    "Labels": "document.labels",
    "ToolLabel": "document.labels",
    "labels_from_schemas": "document.labels",
    "MAX_TRACE_BYTES": "document.messages",
    "Message": "document.shapes",
    "ToolCall": "document.shapes",
    "Trace": "document.shapes",
    "load_trace": "document.messages",
    "parse_trace": "document.messages",
    "render_event": "document.messages",
    "PREDICATES": "predicates",
    "Consent": "predicates",
    "Fact": "predicates",
    "PredicateSpecError": "predicates",
    "TraceFacts": "predicates",
    "analyze": "predicates",
    "compile_bindings": "predicates",
    "facts_json": "predicates",
    "unknown_arguments": "predicates",
    "CallProvenance": "sources.provenance",
    "SourceRef": "sources.provenance",
    "ValueProvenance": "sources.provenance",
    "MAX_STATE_BYTES": "thread.state",
    "TraceIndex": "thread.state",
}
"""Where each public name lives: modules load on first use, so importing one light module
(``guardagent.trace.document.labels`` from a policy file) does not pull in the whole engine."""


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
