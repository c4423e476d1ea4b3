"""Prediction files: the final ordered `predictions.jsonl` and the incremental partial log.

A long eval writes each finished decision to `predictions.partial.jsonl` at once (one line,
flushed), so an interruption loses at most the cases in flight; `--resume` reads the decisions
back, keyed by case id and checked against the case's content, and runs only the rest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from pydantic import ValidationError

from guardagent.decision import GuardDecision
from guardagent.eval.cases import Case
from guardagent.eval.metrics import details_correct, expected_details

PREDICTIONS = "predictions.jsonl"
PARTIAL = "predictions.partial.jsonl"
RUN_FILE = "run.json"


class ResumeMismatchError(ValueError):
    """`--resume` was asked for a directory that holds a run with other settings."""


class UnfinishedRunError(ValueError):
    """A fresh run was asked for a directory that holds the decisions of an interrupted one."""


def refuse_to_drop(out_dir: Path) -> None:
    """Raise when `out_dir` holds an interrupted run's decisions, which a fresh run would drop.

    A finished run (predictions.jsonl) may be replaced: everything in it can be recomputed
    from the command. The partial log of an interrupted run is work only `--resume` keeps.

    Raises:
        UnfinishedRunError: naming how many decisions are there and the two ways on.
    """
    kept = len(_records(out_dir / PARTIAL))
    if kept:
        raise UnfinishedRunError(
            f"{out_dir} holds {kept} decision(s) of an interrupted run ({PARTIAL}); pass "
            "--resume to continue it, --overwrite to drop them and start again, or use "
            "another --out"
        )


def case_key(case: Case) -> str:
    """What a decision depends on: the event. A case edited since the decision gets rerun."""
    text = f"{case.agent_input}\x00{case.agent_output}"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def prediction_record(case: Case, decision: GuardDecision) -> dict[str, Any]:
    """One line of predictions.jsonl: the case's id and label next to the full decision."""
    return {
        "id": case.id,
        "case_key": case_key(case),
        "label": case.label,
        "predicted": decision.label,
        "correct": case.label == decision.label,
        "details_correct": (
            details_correct(case, decision) if expected_details(case) is not None else None
        ),
        "decision": decision.model_dump(mode="json"),
    }


def write_predictions(
    path: Path, cases: Sequence[Case], decisions: Sequence[GuardDecision]
) -> None:
    """The final file, in case order whatever order the decisions finished in."""
    with open(path, "w", encoding="utf-8") as fh:
        for case, decision in zip(cases, decisions, strict=True):
            fh.write(json.dumps(prediction_record(case, decision)) + "\n")


def read_decisions(out_dir: str | Path) -> list[GuardDecision]:
    """The decisions of a finished run, in case order (for notebooks and comparisons)."""
    with open(Path(out_dir) / PREDICTIONS, encoding="utf-8") as fh:
        return [GuardDecision.model_validate(json.loads(line)["decision"]) for line in fh if line]


def _records(path: Path) -> list[dict[str, Any]]:
    """JSON lines of a file; a line cut short by an interruption is skipped."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def load_done(out_dir: Path, cases: Sequence[Case]) -> dict[str, GuardDecision]:
    """Decisions already made in `out_dir` for these cases (final file, then partial log).

    Only records whose id is a current case and whose `case_key` matches that case's event
    are kept, so resuming after the case file changed reruns the changed cases.
    """
    keys = {case.id: case_key(case) for case in cases}
    done: dict[str, GuardDecision] = {}
    for record in _records(out_dir / PREDICTIONS) + _records(out_dir / PARTIAL):
        case_id = record.get("id")
        if case_id not in keys or record.get("case_key") != keys[case_id]:
            continue
        try:
            done[case_id] = GuardDecision.model_validate(record.get("decision"))
        except ValidationError:
            continue
    return done


def check_signature(out_dir: Path, signature: dict[str, Any]) -> bool:
    """True when `out_dir` holds a run with these settings; False when it holds none.

    Raises:
        ResumeMismatchError: when it holds a run with other settings; mixing decisions of two
            methods or models in one result would make its metrics meaningless.
    """
    path = out_dir / RUN_FILE
    if not path.is_file():
        return False
    try:
        previous = json.loads(path.read_bytes())
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError too
        previous = None
    if not isinstance(previous, dict):
        raise ResumeMismatchError(
            f"{path} does not read as a run's settings; use another "
            "--out, or --overwrite to start again"
        )
    if previous != signature:
        changed = sorted(
            k for k in signature.keys() | previous.keys() if signature.get(k) != previous.get(k)
        )
        shown = "; ".join(
            f"{k}: {_setting(previous, k)} there, {_setting(signature, k)} now" for k in changed
        )
        raise ResumeMismatchError(
            f"{out_dir} holds a run with other settings ({shown}); "
            "use another --out or drop --resume"
        )
    return True


def _setting(settings: dict[str, Any], key: str) -> str:
    """One setting's value as a person reads it: JSON (`"offline"`, `3`, `null`), one line."""
    if key not in settings:
        return "(not set)"
    return json.dumps(settings[key], ensure_ascii=False, default=str)


def start_fresh(out_dir: Path, signature: dict[str, Any]) -> None:
    """Forget earlier decisions in `out_dir` and record this run's settings."""
    for name in (PARTIAL, PREDICTIONS):
        (out_dir / name).unlink(missing_ok=True)
    write_signature(out_dir, signature)


def write_signature(out_dir: Path, signature: dict[str, Any]) -> None:
    """Record the settings that decide whether `--resume` may reuse this run's decisions."""
    (out_dir / RUN_FILE).write_text(json.dumps(signature, indent=2) + "\n", encoding="utf-8")


class PartialLog:
    """Append-only log of finished decisions, one flushed JSON line per case."""

    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / PARTIAL
        self._fh: IO[str] | None = None

    def __enter__(self) -> PartialLog:
        needs_newline = False
        if self.path.is_file() and self.path.stat().st_size:
            with open(self.path, "rb") as tail:
                tail.seek(-1, 2)
                needs_newline = tail.read(1) != b"\n"
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in __exit__
        if needs_newline:  # a line cut short by an interruption must not swallow the next one
            self._fh.write("\n")
        return self

    def append(self, case: Case, decision: GuardDecision) -> None:
        """Write and flush one decision, so an interruption keeps it."""
        assert self._fh is not None, "PartialLog used outside its with-block"
        self._fh.write(json.dumps(prediction_record(case, decision)) + "\n")
        self._fh.flush()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def remove(self) -> None:
        """Drop the log once the ordered final file holds every decision."""
        self.path.unlink(missing_ok=True)
