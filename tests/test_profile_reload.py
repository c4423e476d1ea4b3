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
