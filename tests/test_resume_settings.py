"""`eval --resume` into a run with other settings: the message names each setting, readably.

The message is for a person at a terminal: "model: 'offline' there, 'openai:gpt-4o' now", never
a Python dict (`{'model': 'offline'}`) they must decode, whatever the values are.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from guardagent.eval.predictions import RUN_FILE, ResumeMismatchError, check_signature

BASE = {
    "profile": "eicu-ac",
    "method": "guardagent",
    "model": "offline",
    "base_url": None,
    "k": 3,
    "max_attempts": 3,
    "reuse_programs": True,
}
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 50),
    st.text(st.characters(codec="utf-8"), max_size=30),
)


def _mismatch(tmp: Path, previous: dict[str, object], now: dict[str, object]) -> str:
    (tmp / RUN_FILE).write_text(json.dumps(previous), encoding="utf-8")
    with pytest.raises(ResumeMismatchError) as caught:
        check_signature(tmp, now)
    return str(caught.value)


@settings(max_examples=200, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(sorted(BASE)), VALUES, min_size=1))
def test_each_changed_setting_is_named_with_both_values(
    tmp_path_factory: pytest.TempPathFactory, changes: dict[str, object]
) -> None:
    now = {**BASE, **changes}
    if now == BASE:
        return
    message = _mismatch(tmp_path_factory.mktemp("run"), BASE, now)
    for key in sorted(k for k in now if now[k] != BASE[k]):
        there, here = (json.dumps(v, ensure_ascii=False) for v in (BASE[key], now[key]))
        assert f"{key}: {there} there, {here} now" in message
    assert "{'" not in message and "\n" not in message, message  # no Python dict, one line
    assert message.endswith("use another --out or drop --resume")


@pytest.mark.parametrize(
    ("previous", "shown"),
    [
        ({**BASE, "extra": 1}, "extra: 1 there, (not set) now"),
        ({k: v for k, v in BASE.items() if k != "k"}, "k: (not set) there, 3 now"),
    ],
)
def test_a_setting_set_on_one_side_only_says_so(
    tmp_path: Path, previous: dict[str, object], shown: str
) -> None:
    assert shown in _mismatch(tmp_path, previous, BASE)


@pytest.mark.parametrize("content", ["{", "[1, 2]", "\xff", ""])
def test_a_run_file_that_does_not_read_is_refused_in_one_line(tmp_path: Path, content: str) -> None:
    (tmp_path / RUN_FILE).write_bytes(content.encode("latin-1"))
    with pytest.raises(ResumeMismatchError, match="does not read"):
        check_signature(tmp_path, BASE)
