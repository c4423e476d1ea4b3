"""A deterministic synthetic assistant thread of any length, for state tests and benchmarks.

Each turn is a user request, a tool call, its result (mail, contacts, calendar, balances,
web pages: words from a fixed pseudo-vocabulary with e-mail addresses, IBANs, phone
numbers, amounts and dates) and a short model reply. The tools are those of
`assistant_labels.yaml`, so the example labels apply.
"""

from __future__ import annotations

import json
import random
from typing import Any

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "te",
    "vo",
    "zi",
    "pa",
    "do",
    "fe",
    "gu",
    "hi",
    "jo",
    "be",
    "ce",
    "ly",
    "qu",
    "wa",
]
_IBANS = [
    "DE89370400440532013000",
    "GB82WEST12345698765432",
    "CH9300762011623852957",
    "FR1420041010050500013M02606",
    "NL91ABNA0417164300",
]
_TOOLS = [
    ("read_inbox", {"folder": "inbox"}),
    ("search_contacts", {"query": "team"}),
    ("list_events", {"day": "2024-05-17"}),
    ("get_transactions", {"account": "checking"}),
    ("browse", {"url": "https://news.example.com/today"}),
    ("read_messages", {"channel": "family"}),
]


def _vocabulary(rnd: random.Random, size: int = 3000) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rnd.choice(_SYLLABLES) for _ in range(rnd.randint(2, 4))))
    return sorted(words)


def _sentence(rnd: random.Random, vocab: list[str], n: int) -> str:
    return " ".join(rnd.choice(vocab) for _ in range(n)).capitalize() + "."


def _iban_spaced(iban: str) -> str:
    return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))


def _result(rnd: random.Random, vocab: list[str], tool: str, people: list[str]) -> str:
    who = rnd.choice(people)
    parts = [
        f"From {who}@{rnd.choice(vocab)}.example.com:",
        _sentence(rnd, vocab, rnd.randint(12, 30)),
    ]
    if tool in ("read_inbox", "get_transactions"):
        parts.append(
            f"Amount CHF {rnd.randint(10, 9999):,}.{rnd.randint(0, 99):02d} to "
            f"{_iban_spaced(rnd.choice(_IBANS))} due 2024-{rnd.randint(1, 12):02d}-{rnd.randint(1, 28):02d}."
        )
    if tool == "search_contacts":
        parts.append(
            f"{who.title()} | {who}@example.org | +41 44 {rnd.randint(100, 999)} "
            f"{rnd.randint(10, 99)} {rnd.randint(10, 99)}"
        )
    if tool == "browse":
        parts.append(f"See https://{rnd.choice(vocab)}.example.net/{rnd.choice(vocab)} for more.")
    parts.append(_sentence(rnd, vocab, rnd.randint(10, 40)))
    return " ".join(parts)


def thread(n_messages: int, seed: int = 0, *, big_result: int = 0) -> list[dict[str, Any]]:
    """An OpenAI-format thread of exactly `n_messages` messages (user, call, result, reply...).

    Args:
        n_messages: Length.
        seed: Vocabulary and content seed.
        big_result: If positive, the first tool result is padded to this many characters of
            ordinary words (a large web page).
    """
    rnd = random.Random(seed)
    vocab = _vocabulary(rnd)
    people = [f"{rnd.choice(vocab)}.{rnd.choice(vocab)}" for _ in range(50)]
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are Dana's assistant."}]
    turn = 0
    while len(out) < n_messages:
        turn += 1
        tool, args = _TOOLS[turn % len(_TOOLS)]
        call_id = f"call_{turn}"
        out.append(
            {
                "role": "user",
                "content": f"Please check {tool.replace('_', ' ')} about "
                f"{rnd.choice(vocab)} and tell {rnd.choice(people)}@example.org.",
            }
        )
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(args)},
                    }
                ],
            }
        )
        text = _result(rnd, vocab, tool, people)
        if big_result and turn == 1:
            filler = []
            size = 0
            while size < big_result:
                word = rnd.choice(vocab)
                filler.append(word)
                size += len(word) + 1
            text = text + " " + " ".join(filler)
        out.append({"role": "tool", "tool_call_id": call_id, "content": text})
        out.append({"role": "assistant", "content": _sentence(rnd, vocab, rnd.randint(5, 15))})
    return out[:n_messages]


def proposed(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A send_email call to an address the thread's last contact lookup (or a user) gave."""
    for m in reversed(messages):
        if m["role"] in ("tool", "user") and "@example.org" in (m["content"] or ""):
            words = [w.rstrip(".,") for w in m["content"].replace("|", " ").split()]
            address = next(w for w in words if w.endswith("@example.org"))
            return {
                "name": "send_email",
                "args": {
                    "to": address,
                    "subject": "Update",
                    "body": f"Hi, pay {_iban_spaced(_IBANS[0])} today.",
                },
            }
    return {"name": "send_email", "args": {"to": "nobody@example.org", "body": "hi"}}
