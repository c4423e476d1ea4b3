"""Built-in programs' verification results are kept across processes; nothing else is."""

from __future__ import annotations

from pathlib import Path

import pytest

from guardagent.profiles import load_profile, verification
from guardagent.profiles.verification_cache import cache_dir, cached_problems


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """A fresh cache folder, no per-process results, and a log of real verifications."""
    monkeypatch.setenv("GUARDAGENT_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(verification, "_PROBLEMS", {})
    calls: list[str] = []
    real = verification._verify

    def verify(code: str, profile: object) -> list[str]:
        calls.append(code)
        return real(code, profile)  # type: ignore[arg-type]

    monkeypatch.setattr(verification, "_verify", verify)
    return calls


def test_a_shipped_program_is_verified_once_across_processes(counted: list[str]) -> None:
    profile = load_profile("mind2web-sc")
    code = profile.demonstrations[0].code
    assert verification.program_problems(code, profile) == []
    assert len(counted) == 1 and len(list(cache_dir().glob("*.json"))) == 1
    verification._PROBLEMS.clear()  # as in a new process
    assert verification.program_problems(code, profile) == []
    assert len(counted) == 1  # read from the cache


def test_other_programs_are_never_kept(counted: list[str]) -> None:
    profile = load_profile("mind2web-sc")
    code = profile.demonstrations[0].code + "\n# written by a model"
    verification.program_problems(code, profile)
    verification._PROBLEMS.clear()
    verification.program_problems(code, profile)
    assert len(counted) == 2 and not cache_dir().exists()


def test_a_bad_cache_entry_is_a_miss(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GUARDAGENT_CACHE_DIR", str(tmp_path))
    assert cached_problems("k", lambda: ["found"]) == ["found"]
    (entry,) = cache_dir().glob("*.json")
    for bad in ("{not json", '{"a": 1}', "[1, 2]"):
        entry.write_text(bad)
        assert cached_problems("k", lambda: ["again"]) == ["again"]
    assert cached_problems("other key", lambda: []) == []
