"""Derived rules cannot be laundered by `policy review` (issue class 11).

Someone who can write the memory folder but has no key edits a derived rule file (weakens
a rule and marks it approved, which hides it from the default listing), forges its tag, or
restores an older signed file after a stricter sign-off. Review checks the tag and the
sign-off version before anything: it refuses (exit 2, naming the file) and re-signs
nothing; `--accept-unsigned` shows every rule and trusts none of the file's approvals.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from guardagent.authoring.cli import policy
from guardagent.authoring.derive import Derivation, save
from guardagent.environment import MEMORY_KEY
from guardagent.policy.model import load_policy, load_policy_text

TEXT = """\
format: guardagent-policy/1
name: shop-derived
version: '1'
predicates:
  - {name: pays, kind: action, assign: {expression: "call['name'] == 'pay'"}}
  - {name: big, kind: condition, assign: {expression: "call['amount'] > 100"}}
  - {name: verified, kind: condition, assign: {expression: "user['verified'] is True"}}
rules:
  - {id: big-needs-verified, logic: pays AND big IMPLIES verified, review: proposed}
  - {id: never-pay, logic: NOT pays, review: proposed}
  - {id: verified-only, logic: pays IMPLIES verified, review: proposed}
"""
PROFILE = SimpleNamespace(name="shop", fingerprint="ab" * 32)


@pytest.fixture
def derived(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A derived policy signed with the memory's key file, as the guard saves it."""
    monkeypatch.delenv(MEMORY_KEY.name, raising=False)
    mem = tmp_path / "mem"
    path = save(PROFILE, Derivation(load_policy_text(TEXT, "d.yaml"), TEXT), mem)  # type: ignore[arg-type]
    assert path is not None
    _fresh_process()
    return path


def _fresh_process() -> None:
    """Forget the sign-offs this process saw (as a new process would)."""
    try:
        from guardagent.authoring import signoff
    except ImportError:  # the code before sign-off versions (to see these tests fail)
        return
    signoff.forget_signoffs()


def review(path: Path, *args: str):
    return CliRunner().invoke(policy, ["review", str(path), *args])


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.parent.iterdir())}


def test_an_honest_review_records_the_decisions_and_signs_them(derived: Path) -> None:
    listed = review(derived)
    assert listed.exit_code == 0, listed.output
    assert listed.output.count("[proposed]") == 3
    done = review(derived, "--approve", "never-pay", "--reject", "verified-only")
    assert done.exit_code == 0 and "re-signed" in done.output, done.output
    again = review(derived, "--approve", "big-needs-verified")
    assert again.exit_code == 0, again.output
    assert [r.review for r in load_policy(derived).rules] == ["approved", "approved", "rejected"]
    assert review(derived, "--all").exit_code == 0


# Edits someone without the key makes to the file (each leaves the tag stale).
TAMPERING = {
    "weaken and approve": lambda t: t.replace(
        "logic: NOT pays, review: proposed", "logic: NOT pays OR TRUE, review: approved"
    ),
    "approve only": lambda t: t.replace(
        "logic: NOT pays, review: proposed", "logic: NOT pays, review: approved"
    ),
    "reject a rule": lambda t: t.replace(
        "logic: NOT pays, review: proposed", "logic: NOT pays, review: rejected"
    ),
    "drop a rule": lambda t: t.replace(
        "  - {id: never-pay, logic: NOT pays, review: proposed}\n", ""
    ),
    "add an approved rule": lambda t: t + "  - {id: x, logic: TRUE, review: approved}\n",
    "change a reader": lambda t: t.replace("call['amount'] > 100", "call['amount'] > 10**9"),
    "hard to soft": lambda t: t.replace(
        "logic: NOT pays, review: proposed", "logic: NOT pays, review: approved, hard: false"
    ),
    "one space": lambda t: t.replace("rules:", "rules: "),
}


@pytest.mark.parametrize("how", sorted(TAMPERING))
@pytest.mark.parametrize("decide", [(), ("--approve", "big-needs-verified")])
def test_a_file_edited_without_the_key_is_refused_and_never_resigned(
    derived: Path, how: str, decide: tuple[str, ...]
) -> None:
    derived.write_text(TAMPERING[how](derived.read_text()))
    before = _files(derived)
    result = review(derived, *decide)
    assert result.exit_code == 2, (how, result.output)
    assert str(derived) in result.output and "tag" in result.output
    assert _files(derived) == before  # nothing written, nothing re-signed


FORGED = {
    "random tag": lambda fp, tag: f"{fp} {'0' * 64}\n",
    "another fingerprint": lambda fp, tag: f"{'cd' * 32} {tag}\n",
    "empty": lambda fp, tag: "",
    "one field": lambda fp, tag: f"{tag}\n",
    "garbage": lambda fp, tag: "\x00\xff not a tag at all\n",
    "huge version": lambda fp, tag: f"{fp} 99999999999999999999 {tag}\n",
}


@pytest.mark.parametrize("how", sorted(FORGED))
def test_a_forged_tag_is_never_resigned(derived: Path, how: str) -> None:
    sig = derived.with_suffix(".sig")
    fields = sig.read_text().split()
    sig.write_text(FORGED[how](fields[0], fields[-1]))
    derived.write_text(TAMPERING["weaken and approve"](derived.read_text()))
    before = _files(derived)
    result = review(derived, "--approve", "big-needs-verified")
    assert result.exit_code == 2, (how, result.output)
    assert str(derived) in result.output
    assert _files(derived) == before


def test_a_missing_tag_is_refused(derived: Path) -> None:
    derived.with_suffix(".sig").unlink()
    before = _files(derived)
    result = review(derived, "--approve", "never-pay")
    assert result.exit_code == 2 and str(derived) in result.output, result.output
    assert _files(derived) == before


def test_an_older_signed_file_restored_after_a_stricter_signoff_is_a_rollback(
    derived: Path, tmp_path: Path
) -> None:
    assert review(derived, "--reject", "never-pay").exit_code == 0  # the looser sign-off
    saved = tmp_path / "saved"
    saved.mkdir()
    for name in (derived.name, derived.with_suffix(".sig").name):
        shutil.copy(derived.parent / name, saved / name)
    assert review(derived, "--approve", "never-pay").exit_code == 0  # the stricter one
    for name in (derived.name, derived.with_suffix(".sig").name):
        shutil.copy(saved / name, derived.parent / name)  # the attacker restores the old file
    _fresh_process()  # another process: only what is on disk
    before = _files(derived)
    for decide in ((), ("--approve", "verified-only")):
        result = review(derived, *decide)
        assert result.exit_code == 2, result.output
        assert "rollback" in result.output and str(derived) in result.output
        assert _files(derived) == before
    from guardagent.authoring import signoff

    key = signoff.memory_dir_key(derived)
    assert key is not None
    with pytest.raises(signoff.SignoffError, match="rollback"):
        signoff.read_signed(derived, key)


def test_accept_unsigned_shows_every_rule_and_trusts_none_of_its_approvals(derived: Path) -> None:
    derived.write_text(TAMPERING["weaken and approve"](derived.read_text()))
    shown = review(derived, "--accept-unsigned")
    assert shown.exit_code == 0, shown.output
    assert "tag does not check" in shown.output
    assert "[approved] never-pay" in shown.output  # the hidden rule is shown
    assert shown.output.count("rule added") == 3  # the diff against nothing
    adopted = review(derived, "--accept-unsigned", "--approve", "big-needs-verified")
    assert adopted.exit_code == 0, adopted.output
    states = {r.id: r.review for r in load_policy(derived).rules}
    assert states == {
        "big-needs-verified": "approved",
        "never-pay": "proposed",
        "verified-only": "proposed",
    }
    assert review(derived).exit_code == 0  # signed now: an ordinary review again


# --------------------------------------------------------------------------- the guard's side


def test_the_guard_uses_no_rolled_back_derivation(tmp_path: Path, caplog, monkeypatch) -> None:
    from guardagent import GuardAgent
    from guardagent.authoring.derive import load_cached
    from guardagent.profiles import load_profile
    from tests.derived_answers import answer_text
    from tests.scripted import ScriptedChatModel
    from tests.test_model_oracle import (
        HOTEL_PAGE,
        MINOR_HOTEL,
        WEB_PROGRAM,
        fenced,
        without_programs,
    )

    monkeypatch.delenv(MEMORY_KEY.name, raising=False)
    prose = without_programs(tmp_path, "mind2web-sc", "m2w-prose")
    mem = tmp_path / "mem"
    model = ScriptedChatModel.of([answer_text("mind2web-sc"), "plan", fenced(WEB_PROGRAM)])
    GuardAgent(str(prose), model=model, memory_dir=str(mem)).check(MINOR_HOTEL, HOTEL_PAGE)
    [path] = (mem / "derived").glob("*.yaml")
    assert review(path, "--reject", "hotel-needs-adult").exit_code == 0
    saved = {p.name: p.read_bytes() for p in (path, path.with_suffix(".sig"))}
    assert review(path, "--approve", "hotel-needs-adult").exit_code == 0
    profile = load_profile(str(prose))
    assert load_cached(profile, mem) is not None  # the latest sign-off is used
    for name, data in saved.items():
        (path.parent / name).write_bytes(data)
    _fresh_process()
    assert load_cached(profile, mem) is None
    assert f"derived rules in {path} are not used" in caplog.text and "rollback" in caplog.text


def test_without_the_memorys_key_review_refuses_to_read_or_sign(derived: Path) -> None:
    (derived.parent.parent / "memory.key").unlink()
    before = _files(derived)
    for decide in ((), ("--approve", "never-pay")):
        result = review(derived, *decide)
        assert result.exit_code == 2 and "key is not available" in result.output, result.output
        assert _files(derived) == before


def test_accept_unsigned_signs_nothing_whose_request_it_cannot_tell(derived: Path) -> None:
    derived.with_suffix(".sig").write_text("garbage\n")
    shown = review(derived, "--accept-unsigned")
    assert shown.exit_code == 0 and "[proposed] never-pay" in shown.output, shown.output
    before = _files(derived)
    result = review(derived, "--accept-unsigned", "--approve", "never-pay")
    assert result.exit_code == 2 and "refusing to sign" in result.output, result.output
    assert _files(derived) == before
