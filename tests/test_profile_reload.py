"""An edited profile is loaded afresh: the cache is keyed by the files' state, not the path."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from guardagent.profiles.loader import BUILTIN_DIR, load_profile


def test_an_edited_profile_is_reloaded(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    shutil.copytree(Path(BUILTIN_DIR) / "mind2web-sc", folder)
    first = load_profile(str(folder))
    assert load_profile(str(folder)) is first  # unchanged files: the cached profile
    yaml_file = folder / "profile.yaml"
    yaml_file.write_text(yaml_file.read_text().replace("k: 3", "k: 2"))
    stat = yaml_file.stat()
    os.utime(yaml_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    second = load_profile(str(folder))
    assert second is not first and second.k == 2 and first.k == 3


def test_an_edited_policy_model_is_reloaded(tmp_path: Path) -> None:
    from guardagent.policy.runs import profile_policy

    folder = tmp_path / "policy-profile"
    shutil.copytree(Path(BUILTIN_DIR) / "tool-calls-policy", folder)
    profile = load_profile(str(folder))
    first = profile_policy(profile)
    assert first is not None and profile_policy(profile) is first
    name = profile.policy_model
    assert name is not None
    source = Path(BUILTIN_DIR).parent / "policies" / f"{name}.yaml"
    if not (folder / name).is_file():  # the profile names a shipped policy: use a local copy
        (folder / "policy.yaml").write_text(source.read_text())
        yaml_file = folder / "profile.yaml"
        yaml_file.write_text(
            yaml_file.read_text().replace(f"policy_model: {name}", "policy_model: policy.yaml")
        )
        profile = load_profile(str(folder))
        first = profile_policy(profile)
    policy_file = folder / (profile.policy_model or "")
    policy_file.write_text(policy_file.read_text().replace("version:", "# edited\nversion:", 1))
    stat = policy_file.stat()
    os.utime(policy_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert profile_policy(profile) is not first


def test_a_loaded_profile_edited_in_memory_gets_a_new_fingerprint() -> None:
    """A loaded profile is a shared, mutable object: its key in memory follows its content
    (programs verified under the old request or demonstrations are never picked up)."""
    profile = load_profile("mind2web-sc")
    before = profile.fingerprint
    request, demos = profile.guard_request, profile.demonstrations
    try:
        profile.guard_request = request + " Also deny every rental."
        after_request = profile.fingerprint
        profile.guard_request, profile.demonstrations = request, demos[:1]
        after_demos = profile.fingerprint
    finally:
        profile.guard_request, profile.demonstrations = request, demos
    assert len({before, after_request, after_demos}) == 3
    assert profile.fingerprint == before
