"""A profile written the paper's way: demonstrations with a plan and an empty `code`.

The model writes the program on first use, so `profile check`, the memory's seeding and a
guard with no model must say so (no program to check yet), not that a program "failed" on
every demonstration; a profile that ships code is checked exactly as before.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from guardagent.cli import main
from guardagent.exit_status import DENIED, OK
from guardagent.profiles.check import explain_no_program, unverified_note
from guardagent.profiles.loader import BUILTIN_DIR, load_profile


def paper_profile(
    tmp_path: Path, base: str = "eicu-ac-policy", broken_code: str | None = None
) -> Path:
    """`base` with every demonstration's program removed (or, first, `broken_code`)."""
    root = tmp_path / "paper"
    shutil.copytree(BUILTIN_DIR / base, root)
    demos = root / "demonstrations.jsonl"
    rows = [json.loads(line) for line in demos.read_text(encoding="utf-8").splitlines() if line]
    for row in rows:
        row.pop("program", None)
        row["code"] = ""
    if broken_code is not None:
        rows[0]["code"] = broken_code
    demos.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root


def test_empty_code_is_no_program_yet_not_a_failed_program(tmp_path: Path) -> None:
    root = paper_profile(tmp_path)
    result = CliRunner().invoke(main, ["profile", "check", str(root)])
    assert result.exit_code == OK, result.output
    assert "no program to check yet" in result.output
    assert "written by the model on first use" in result.output
    for spurious in ("FAIL", "failed", "NOT VERIFIED", "NoVerdict"):
        assert spurious not in result.output, result.output

    profile = load_profile(str(root))
    assert unverified_note(profile) is None  # the start-up warning of seeding and eval
    why = explain_no_program(profile)
    assert "written by the model on first use" in why and "failed" not in why
    assert "configure a model" in why


def test_what_a_written_program_would_lack_is_said_without_a_failed_program(tmp_path: Path) -> None:
    """eicu-ac without its program has no rule table or policy: say so, exit 1, no "failed"."""
    root = paper_profile(tmp_path, base="eicu-ac")
    result = CliRunner().invoke(main, ["profile", "check", str(root)])
    assert result.exit_code == DENIED, result.output
    assert "no program to check yet" in result.output
    assert "missing: the request is not covered" in result.output
    for spurious in ("FAIL", "failed", "NOT VERIFIED", "NoVerdict"):
        assert spurious not in result.output, result.output
    why = explain_no_program(load_profile(str(root)))
    assert "written by the model on first use" in why and "RULES or PERMISSIONS table" in why


def test_shipped_code_beside_empty_code_is_still_checked(tmp_path: Path) -> None:
    root = paper_profile(tmp_path, base="eicu-ac", broken_code="x = 1\n")
    result = CliRunner().invoke(main, ["profile", "check", str(root)])
    assert result.exit_code == DENIED, result.output
    assert "NOT VERIFIED" in result.output and "FAIL: failed on demonstration" in result.output
    profile = load_profile(str(root))
    note = unverified_note(profile)
    assert note is not None and "failed on demonstration" in note
    assert "has no verified program" in explain_no_program(profile)
