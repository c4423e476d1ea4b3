"""The conversation as the user read it, when the agent speaks through a message tool.

A web agent (BrowserGym-style) has no chat reply: it tells the user something with an action,
``send_msg_to_user(text)``, the harness answers the call ("sent"), and the user's reply comes
next. Its other turns carry the model's reasoning beside an action (``click``), which the
user never reads. Read as a chat, the message before the user's yes is then a tool result and
no question was ever asked: every honest yes was refused. The deployer names the tool that
speaks to the user (``via``, a tool glob) and :func:`user_view` shows each assistant turn as
the user read it:

- a turn whose every call is a **delivered** call of the message tool (its result is in the
  trace and is not an error) with **one** text argument reads as a reply with that text and
  no call; an undelivered or ambiguous one (two text arguments: which did the user read?)
  stays a call, so it asks nothing;
- a turn making any other call keeps its calls (it acts; a yes after it answers no question)
  and shows only its delivered messages' text: its reasoning is not what the user read;
- every other message is unchanged.

:func:`asker` then finds the message a user's answer replies to: the one right before it,
passing over only the message tool's results of that very turn. Nothing else may stand
between: another action's result, or a turn of the agent, means the yes answers something
else.
"""

from __future__ import annotations

import dataclasses
import fnmatch

from guardagent.trace.document.shapes import Message, ToolCall, Trace
from guardagent.trace.thread.state import flatten


def sent_text(trace: Trace, call: ToolCall) -> str | None:
    """The text a delivered call of the message tool showed the user, or None.

    None when the result is missing or an error (the user never read it), or when the call
    holds no text or more than one (which one did the user read?).
    """
    shown = trace.result_of(call)
    if shown is None or shown.status != "ok":
        return None
    texts = [v for _, v in flatten(call.args) if isinstance(v, str)]
    return texts[0] if len(texts) == 1 else None


def user_view(trace: Trace, via: str) -> tuple[Message, ...]:
    """The trace's messages, each assistant turn that makes calls as the user read it. Linear."""
    out: list[Message] = []
    for message in trace.messages:
        if message.role != "assistant" or not message.calls:
            out.append(message)
            continue
        said: list[str] = []
        acts = False
        for call in message.calls:
            text = sent_text(trace, call) if fnmatch.fnmatchcase(call.name, via) else None
            if text is None:
                acts = True
            else:
                said.append(text)
        out.append(
            dataclasses.replace(message, text="\n".join(said), calls=message.calls if acts else ())
        )
    return tuple(out)


def asker(
    trace: Trace, view: tuple[Message, ...], answer: Message, via: str | None
) -> Message | None:
    """The message the user's `answer` replies to (in `view`), or None (it is the first).

    Without `via`, the message right before it. With `via`, results of that message's own
    calls of the message tool in between are passed over; any other result is not.
    """
    at = answer.index - 1
    if via is None:
        return view[at] if at >= 0 else None
    skipped: list[ToolCall] = []
    while at >= 0 and view[at].role == "tool":
        call = trace.call_of(view[at])
        if call is None or not fnmatch.fnmatchcase(call.name, via):
            return view[at]  # another tool's result: the answer follows no question
        skipped.append(call)
        at -= 1
    if at < 0:
        return None
    if any(c.index != at for c in skipped):
        return view[answer.index - 1]  # a result of an earlier turn's message: not this turn
    return view[at]
