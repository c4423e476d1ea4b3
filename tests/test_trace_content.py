"""Content parts: only what a chat shows as text is a message's text (user, system,
assistant); every other part is evidence of another source, in any layout of parts."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.trace import parse_trace

MARK = "ZQXJ-HIDDEN"
_TEXT = st.text(st.characters(whitelist_categories=("L", "N", "Zs")), max_size=12)
_SHOWN = st.one_of(
    _TEXT,
    st.builds(
        lambda t, k: {"type": k, "text": t},
        _TEXT,
        st.sampled_from(["text", "input_text", "output_text"]),
    ),
    st.builds(lambda t: {"type": "refusal", "refusal": t}, _TEXT),
)
_KINDS = [
    "image_url",
    "reasoning",
    "thinking",
    "file",
    "input_audio",
    "json",
    "text",
    "refusal",
    "function_call",
    "unknown",
]
_FIELDS = st.sampled_from(["alt", "summary", "thinking", "data", "caption"])
_HIDDEN = st.builds(lambda k, f: {"type": k, f: MARK}, st.sampled_from(_KINDS), _FIELDS)
_HIDDEN_USER = st.builds(
    lambda k, f: {"type": k, f: MARK}, st.sampled_from([*_KINDS, "tool_use"]), _FIELDS
)


def _shown(parts: list[Any]) -> str:
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif p.get("type") in ("text", "input_text", "output_text") and "text" in p:
            out.append(p["text"])
        elif p.get("type") == "refusal" and "refusal" in p:
            out.append(p["refusal"])
    return "\n".join(out)


@settings(max_examples=150, deadline=None)
@given(
    user_parts=st.lists(st.one_of(_SHOWN, _HIDDEN_USER), max_size=6),
    asked_parts=st.lists(st.one_of(_SHOWN, _HIDDEN), max_size=6),
    role=st.sampled_from(["user", "system"]),
)
def test_a_part_not_shown_as_text_is_never_user_system_or_asked_text(
    user_parts: list[Any], asked_parts: list[Any], role: str
) -> None:
    """Any mix of shown and hidden parts, in any order: the user's (or deployer's) text and
    the assistant's question are exactly the shown parts; the hidden ones are kept as
    evidence of an untrusted source (`tool:?`), or of the model in an assistant message."""
    messages = [
        {"role": role, "content": user_parts},
        {"role": "assistant", "content": asked_parts},
        {"role": "user", "content": [*asked_parts, *user_parts]},
    ]
    trace = parse_trace(messages, {"name": "noop", "args": {}})
    said = [m for m in trace.messages if m.source in ("user", "system")]
    assert [m.text for m in said] == [_shown(user_parts), _shown([*asked_parts, *user_parts])]
    asked = [m for m in trace.messages if m.role == "assistant"]
    assert asked[-1].text == _shown(asked_parts)
    assert all(MARK in m.text for m in asked[:-1]) and len(asked) <= 2
    hidden = [m for m in trace.messages if m.source == "tool:?"]
    assert all(m.role == "tool" for m in hidden)
    assert (MARK in "".join(m.text for m in hidden)) == any(
        isinstance(p, dict) and MARK in p.values() for p in user_parts + asked_parts
    )
