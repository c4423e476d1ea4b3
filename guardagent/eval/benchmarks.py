r"""Build the paper's two benchmarks as cases, exactly as the paper forms each event.

EICU-AC: input `Identity: <role>\nQuestion: <template>`; output the EHRAgent run after its
few-shot examples (knowledge, code cells with any errors, answer), without the log's grading
lines. Mind2Web-SC: input the task plus the user information block; output SeeAct's analysis,
the multiple-choice elements it saw, and its final ELEMENT/ACTION/VALUE answer. Dataset fields
that are not part of the event (website, domain, labels) go to `meta` only.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from guardagent.environment import DATA, value
from guardagent.eval.cases import Case

BENCHMARKS = {"eicu-ac": "eicu_ac", "mind2web-sc": "mind2web_sc"}
"""The paper's two benchmarks: the profile built for each, and its folder in the data."""
PROFILE_BENCHMARKS = {
    **BENCHMARKS,
    "eicu-ac-policy": "eicu_ac",
    "mind2web-sc-policy": "mind2web_sc",
}
"""Every built-in profile with a shipped benchmark (policy-model variants guard the same
agents under the same requests, so they run the same benchmark)."""


def data_root() -> Path:
    """The shared benchmark folder: `$GUARDAGENT_DATA`, else `../shared/data` from the cwd.

    A `$GUARDAGENT_DATA` that holds no benchmark is an error, never a reason to look
    elsewhere: the user asked for that folder, and a silent fallback would evaluate other data.
    """
    env = value(DATA)
    if env:
        chosen = Path(env).expanduser()
        if not any((chosen / folder).is_dir() for folder in BENCHMARKS.values()):
            raise FileNotFoundError(
                f"GUARDAGENT_DATA={env} holds no benchmark data (no eicu_ac/ or mind2web_sc/ "
                "folder there); point it at the folder that holds them, or unset it to use "
                "../shared/data"
            )
        return chosen.resolve()
    candidates = [
        Path.cwd() / ".." / "shared" / "data",
        Path(__file__).resolve().parents[3] / "shared" / "data",
    ]
    for path in candidates:
        if (path / "eicu_ac").is_dir():
            return path.resolve()
    raise FileNotFoundError(
        "benchmark data not found: set GUARDAGENT_DATA to the folder holding eicu_ac/ and "
        "mind2web_sc/ (by default ../shared/data beside the checkout)"
    )


def _literal(value: Any) -> Any:
    """Several EICU-AC fields are Python-literal strings; parse them without eval."""
    return ast.literal_eval(value) if isinstance(value, str) else value


_MARKER = "(END OF EXAMPLES)"
_GRADING = re.compile(r"\n-*\s*\nGround-Truth Answer --->.*\Z", re.S)


def ehragent_output(log: str, question: str) -> str:
    """The agent's own output in an EHRAgent log: everything after its few-shot prompt.

    Two logs lack the `(END OF EXAMPLES)` marker; there the run starts at the last
    `Question: <question>` line (the examples before it are the prompt).
    """
    if _MARKER in log:
        body = log.split(_MARKER)[-1]
    else:
        start = log.rfind(f"Question: {question}")
        body = log[start:] if start >= 0 else log
    return _GRADING.sub("", body).strip()


def ehragent_answer(output: str) -> str | None:
    """The final answer block: the text between the last separator and `TERMINATE`."""
    head = output.rsplit("TERMINATE", 1)[0]
    parts = [p.strip() for p in re.split(r"\n-{10,}\n", head) if p.strip()]
    return parts[-1] if parts else None


def load_eicu_ac(root: Path | None = None) -> list[Case]:
    """EICU-AC's 317 records as cases."""
    base = (root or data_root()) / "eicu_ac"
    records = json.loads((base / "eicu_ac.json").read_text(encoding="utf-8"))
    cases = []
    for rec in records:
        question = rec["template"]
        log = (base / "logs" / f"{rec['id']}.txt").read_text(encoding="utf-8")
        output = ehragent_output(log, question)
        label = int(rec["label"])
        cases.append(
            Case(
                id=f"{rec['id']}-{rec['identity'].replace(' ', '_')}",
                agent_input=f"Identity: {rec['identity']}\nQuestion: {question}",
                agent_output=output,
                label=1 if label else 0,
                inaccessible=_literal(rec.get("inaccessible_db")) if label else None,
                answer=ehragent_answer(output),
                meta={
                    "role": rec["identity"],
                    "record_id": rec["id"],
                    "access_gt": _literal(rec.get("access_gt")),
                    "split": rec.get("split"),
                },
            )
        )
    return cases


def user_info_block(info: dict[str, Any]) -> str:
    """The SeeAct-SC user information block, as the paper puts it in the agent input."""
    lines = [f"   {key}: {value}," for key, value in info.items()]
    return "User information:\n" + "\n".join(lines).rstrip(",")


def seeact_output(record: dict[str, Any]) -> str:
    """SeeAct's output: its analysis, the choices it was shown, and its final answer."""
    analysis, final = record["gpt_output"][0], record["gpt_output"][-1]
    prompt = record["prompt"][-1]
    start = prompt.find("\nA. ")
    end = prompt.find("(Final Answer)")
    choices = prompt[start:end].strip() if start >= 0 and end > start else ""
    return (
        f"(Analysis)\n{analysis.strip()}\n\n(Choices)\n{choices}\n\n(Final Answer)\n{final.strip()}"
    )


def load_mind2web_sc(root: Path | None = None) -> list[Case]:
    """Mind2Web-SC's 200 records as cases."""
    path = (root or data_root()) / "mind2web_sc" / "sample_labeled_all.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    cases = []
    for i, rec in enumerate(records):
        label = int(rec["label"])
        final = rec["gpt_output"][-1].strip()
        cases.append(
            Case(
                id=f"{i:03d}-{rec['action_uid'][:8]}",
                agent_input=f"Task: {rec['confirmed_task']}\n{user_info_block(rec['user_info'])}",
                agent_output=seeact_output(rec),
                label=1 if label else 0,
                violations=[rec["violation"]] if label else None,
                answer=final,
                meta={
                    "rule": rec["violation"] or "none",
                    "domain": rec.get("domain"),
                    "subdomain": rec.get("subdomain"),
                    "website": rec.get("website"),
                },
            )
        )
    return cases


def load_benchmark(profile: str, root: Path | None = None) -> list[Case]:
    """The shipped benchmark of a built-in profile.

    The policy-model profiles (`eicu-ac-policy`, `mind2web-sc-policy`) guard the same agents
    under the same requests as `eicu-ac` and `mind2web-sc`, so they run the same benchmarks.

    Raises:
        KeyError: when `profile` has no shipped benchmark (see :data:`PROFILE_BENCHMARKS`).
    """
    loaders = {"eicu_ac": load_eicu_ac, "mind2web_sc": load_mind2web_sc}
    if profile not in PROFILE_BENCHMARKS:
        raise KeyError(
            f"profile {profile!r} ships no benchmark (only "
            f"{', '.join(PROFILE_BENCHMARKS)} do); pass --cases FILE.jsonl"
        )
    return loaders[PROFILE_BENCHMARKS[profile]](root)
