"""The deployment states the users' date: year-less dates are read in its year (issue 33, 10).

A host replaying a thread, or one whose clock sits in another year than its users (a time
zone at New Year), states `today` (`GUARDAGENT_TODAY`); the trace's own "Today is ..." line
still wins for its trace.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from guardagent import GuardAgent
from guardagent.context import GuardContext

POLICY = """\
format: guardagent-policy/1
name: dates
version: "1"
labels:
  tools:
    book: {results: trusted, effect: irreversible, args: [day]}
predicates:
  - {name: books, kind: action, assign: {trace: 'tool_is("book")'}}
  - {name: day_from_user, kind: condition, assign: {trace: 'arg_from_user("day")'}}
rules:
  - {id: the-users-day, logic: books IMPLIES day_from_user, policy: The day is one the user gave}
"""
PROFILE = """\
name: dates
guard_request: Book only the day the user gave.
agent_specification: A booking agent; its events are traces.
toolbox: []
demonstrations: []
policy_model: policy.yaml
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("dates")
    (folder / "policy.yaml").write_text(POLICY, encoding="utf-8")
    (folder / "profile.yaml").write_text(PROFILE, encoding="utf-8")
    return folder


def booking(day: str, system: str | None = None) -> list[dict[str, Any]]:
    head = [{"role": "system", "content": system}] if system else []
    return [
        *head,
        {"role": "user", "content": "Book the room for June 13, please."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "book", "arguments": f'{{"day": "{day}"}}'},
                }
            ],
        },
    ]


@pytest.mark.parametrize("year", [2019, 2031, date.today().year + 1])
def test_the_stated_date_gives_year_less_dates_their_year(root: Path, year: int) -> None:
    guard = GuardAgent(str(root), today=f"{year}-03-04")
    assert guard.check_trace(booking(f"{year}-06-13")).allowed
    other = guard.check_trace(booking(f"{year + 1}-06-13"))
    assert not other.allowed and "the-users-day" in other.reason


def test_the_traces_own_date_line_wins(root: Path) -> None:
    guard = GuardAgent(str(root), today="2031-03-04")
    assert guard.check_trace(booking("2027-06-13", "Today is 2027-01-02.")).allowed


def test_the_setting_reads_from_the_environment_and_refuses_a_bad_date() -> None:
    assert GuardContext.from_env({"GUARDAGENT_TODAY": "2031-03-04"}).today_date == date(2031, 3, 4)
    with pytest.raises(ValueError, match="GUARDAGENT_TODAY"):
        GuardContext.from_env({"GUARDAGENT_TODAY": "March 4th"})
    with pytest.raises(ValueError, match="ISO date"):
        GuardContext(today="2031-02-30")
