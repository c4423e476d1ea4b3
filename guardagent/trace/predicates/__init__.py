"""Trace facts as named predicates, each with the messages that decided it.

A policy model (:mod:`guardagent.policy`) judges an event by predicates. This module gives
the trace engine's facts that shape: each predicate is a function of the analysed trace
(:class:`TraceFacts`) returning a :class:`Fact` (True, False, or None when it cannot be
told) with the source messages that decided it and one line that says why. A policy binds
its predicate names to predicate expressions, written as calls with literal arguments and
read with :mod:`ast` (never evaluated)::

    recipient_untrusted: arg_only_untrusted("to")
    iban_invented:       arg_invented("iban")
    balance_checked:     called_before("get_balance", status="ok")
    leaks_secret:        secret_flow()
    recipient_confirmed: consent_given("to")

Predicates (``arg`` is an argument name or path prefix, ``"*"`` every argument,
``"@recipients"`` the recipient arguments of the tool's label); docs/reference/predicates.md
has them all in one table (generated from the code), with what an absent or unreadable value
gives:

- the call (:mod:`.call`): ``tool_is(*globs)``, ``effect_is(*effects)``, ``tool_labelled()``;
- provenance (:mod:`.provenance`): ``arg_present(arg)``, ``arg_from_user(arg)``,
  ``arg_from_trusted_tool(arg)``, ``arg_from_trusted(arg)`` (user, system, trusted tool or
  the user's records), ``arg_from_records(arg, section=None)``, ``arg_only_untrusted(arg)``,
  ``arg_invented(arg)``. The ``from`` predicates hold when *every* selected value comes
  from such a source (so they hold for an absent argument, except ``arg_from_records``),
  the other two when *any* value does (so they fail for an absent one); for
  ``"@recipients"``, a call that names no recipient leaves them open (None: a rule that
  needs them denies), unless the label declares its ``recipients`` and every one is absent
  or empty (the call sends to nobody: as an absent argument). Keyword options:
  ``kinds="email,iban"`` (only values of those kinds; by default whole argument values,
  except that a free-text value holding e-mail addresses, URLs, IBANs or phone numbers is
  judged by those), ``part="host"`` or
  ``"domain"`` (a URL's host or registered domain instead of the whole URL);
- derived (:mod:`.derived`, predicate in :mod:`.document`): ``arg_from_designated(arg,
  hops=1, via=None, addressed=False)``: the value is in a document the user pointed at (a
  call whose arguments the user gave), chain named, and not only inside text that document
  addresses to the agent (``addressed=True``: there too);
- typed by field (:mod:`.fields_from`): ``arg_from_field(arg, tool, path)``: every value is
  a whole value at a field path of an earlier trusted `tool` result (it exists in that
  listing, whatever the trust of the field's text);
- the attacker inside that document (:mod:`.document`): ``arg_designated_unaddressed(arg)``
  (written there outside text addressed to the agent), ``arg_designated_unique(arg)`` (the
  only value of its kind there), ``arg_from_same_document(arg, other)`` (both from one
  document), each with ``hops=1, via=None, kinds=None``;
- the call's own arguments (:mod:`.arguments`): ``arg_equals``, ``arg_in`` (a list or a
  ``"@section"`` of the user's records), ``arg_contains``, ``arg_glob``, ``arg_match``
  (RE2), ``arg_compare`` (numbers), ``arg_similar`` (``rapidfuzz``), each with
  ``match="every" | "any"``;
- order and counts (:mod:`.history`, :mod:`.sequences`): ``called_before(pattern,
  args={...}, status=...)``, ``called_at_least(pattern, n)``, ``order_holds(first, then)``
  (every ``then`` call, this one included, comes after a ``first`` call),
  ``nothing_after(pattern)`` / ``never_after(pattern)`` (no ``pattern`` call happened
  before this one), ``immediately_after(pattern)``, ``within_steps(pattern, n)``,
  ``at_most(pattern, n)``, ``called_in_a_row(*patterns)`` (earlier calls matching the
  patterns as contiguous steps, in order);
- the assistant's words (:mod:`.asked`): ``asked_before(text, threshold=90,
  scorer="ratio", via=None, within=None, yes=False, words=())``: the assistant asked the
  user a question like `text` earlier (a reply, or a delivered call of the `via` message
  tool; never a tool result or user text), with the user's plain yes right after when
  ``yes=True``;
- navigation: ``navigation_in_scope(*scopes, arg="url")`` (every URL of the argument is in
  a scope; none, or one that does not read as a URL, is not),
  ``history_in_scope(*scopes, tool="*", arg="url")`` (every earlier such call was);
- secrets (:mod:`.secrets`): ``secret_flow(effects="send")``,
  ``value_from_sensitive(arg="*")``, ``secret_in_args(arg="*", names=None)`` (a declared
  secret of the policy, in clear or encoded);
- consent: ``consent_given(arg=None, conversation=False, similarity=85, match="both")``: a
  :class:`Consent` record from the host's review approves this call (or, with `arg`, these
  values of the argument), in the thread the record names, for the call id it names, once
  (or ``uses`` times: :mod:`.ledger` counts them in the thread's state). Text in a message
  never counts, except opted in with ``conversation=True``: the user's plain yes, as the
  thread's last user message, to the assistant's question naming this call approves it
  once (:mod:`.conversation`).

A predicate that fails while evaluating is open (None), never "holds".

A predicate's expression is checked when bound (:func:`compile_bindings`): an unknown
predicate, a non-literal argument or a bad option is a configuration error then, not a
denial later.
"""

from collections.abc import Sequence

# the predicate modules register themselves with the engine when imported
from guardagent.trace.predicates import (  # noqa: F401
    arguments,
    asked,
    call,
    consent,
    derived,
    document,
    fields_from,
    history,
    provenance,
    secrets,
    sequences,
)
from guardagent.trace.predicates.engine import (
    PREDICATES,
    TraceFacts,
    analyze,
    compile_bindings,
    compile_predicate,
    facts_json,
    predicate,
    unknown_arguments,
)
from guardagent.trace.predicates.fact import Fact, PredicateSpecError
from guardagent.trace.predicates.provenance import INNER_KINDS
from guardagent.trace.predicates.record import Consent, Decision

__all__: Sequence[str] = [
    "INNER_KINDS",
    "PREDICATES",
    "Consent",
    "Decision",
    "Fact",
    "PredicateSpecError",
    "TraceFacts",
    "analyze",
    "compile_bindings",
    "compile_predicate",
    "facts_json",
    "predicate",
    "unknown_arguments",
]
