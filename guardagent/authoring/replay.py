"""A recorded model: answers extraction, refinement and scoring prompts from a JSON file.

For the offline walkthrough (``--model replay:answers.json``) and tests: the answers a model
gave (or a person wrote) for one document, replayed so extract -> optimize -> review can be
run and demonstrated without a network. It is a test double, not a model: it knows nothing
beyond the file, and a prompt the file has no answer for gets ``{}`` (which validation then
refuses, as it would a real model's useless answer).

File layout::

    {"extract": {"<section ref>": {"policies": [...]}},
     "refine": [{"rule": "<rule id>", "definitions": {...}, "predicates": [...], "rules": [...]}],
     "vagueness": {"<predicate>": 0.8, "default": 0.1}}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from guardagent.policy.formula import variables
from guardagent.policy.grammar import LogicSyntaxError, parse_logic
from guardagent.readers.textio import read_text_file


def _field(text: str, label: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(label):
            return line[len(label) :].strip()
    return None


def _rule_lines(text: str) -> list[tuple[str, str]]:
    """(rule id, logic) from the ``- id: logic -- ...`` lines of a refine/score prompt."""
    out = []
    for line in text.splitlines():
        if not line.startswith("- ") or ": " not in line:
            continue
        rule_id, _, rest = line[2:].partition(": ")
        out.append((rule_id.strip(), rest.split(" -- ", 1)[0].strip()))
    return out


def replay_reply(answers: dict[str, Any], system: str, user: str) -> str:
    """The recorded answer to one prompt (``{}`` when the file has none)."""
    if system.startswith("You extract"):
        ref = _field(user, "Section reference:")
        return json.dumps(answers.get("extract", {}).get(ref, {}))
    if system.startswith("You refine"):
        present = {rule_id for rule_id, _ in _rule_lines(user)}
        proposals = [p for p in answers.get("refine", []) if p.get("rule") in present]
        return json.dumps({"proposals": proposals})
    if system.startswith("You score"):
        table: dict[str, float] = answers.get("vagueness", {})
        default = float(table.get("default", 0.5))
        scores: dict[str, float] = {}
        for rule_id, logic in _rule_lines(user):
            try:
                names = variables(parse_logic(logic))
            except LogicSyntaxError:
                names = ()
            scores[rule_id] = max((float(table.get(n, default)) for n in names), default=default)
        return json.dumps({"scores": scores})
    return "{}"


def _text(message: BaseMessage) -> str:
    content = message.content
    return content if isinstance(content, str) else json.dumps(content)


class ReplayChatModel(BaseChatModel):
    """Chat model answering from a recorded answers file (see the module docstring)."""

    answers: dict[str, Any]
    calls: int = 0

    @classmethod
    def from_file(cls, path: str | Path) -> ReplayChatModel:
        """Load the answers file.

        Raises:
            ValueError: the file cannot be read or is not a JSON object.
        """
        try:
            data = json.loads(read_text_file(path))
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot read replay answers {path}: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"replay answers {path} must be a JSON object")
        return cls(answers=data)

    @property
    def _llm_type(self) -> str:
        return "guardagent-replay"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.calls += 1
        system = next((_text(m) for m in messages if m.type == "system"), "")
        user = next((_text(m) for m in messages if m.type == "human"), "")
        reply = replay_reply(self.answers, system, user)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])
