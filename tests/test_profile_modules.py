"""Custom toolbox modules named by a profile load the same in the API, the CLI and the server.

A profile's `toolbox_modules` are the deployer's code: they run when the deployment loads the
profile, never because a run named a profile by path. Their functions are not built-ins, so
the sandbox forks the calling process (which holds them) instead of the zygote.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from guardagent import GuardAgent, build_graph
from guardagent.profiles.loader import ProfileError, load_profile
from guardagent.sandbox.dataflow import check_dataflow
from guardagent.sandbox.zygote import toolbox_refs

RULE = "Only on-call staff may close urgent tickets"
READER = '''
from guardagent.readers.evidence import unreadable
from guardagent.tools import guard_tool


@guard_tool(group="tickets")
def ticket_action(agent_output: str) -> dict:
    """The ticket action a helpdesk log ends with: {"verb": ..., "priority": ...}.

    A reader (its parameter is `agent_output`). A log without an ACTION line cannot be read.
    """
    for line in reversed(agent_output.splitlines()):
        if line.startswith("ACTION:"):
            verb, _, priority = line.removeprefix("ACTION:").strip().partition(" ")
            return {"verb": verb.lower(), "priority": priority.strip().lower()}
    unreadable("no_action", "the log has no ACTION line")


@guard_tool(group="tickets")
def ticket_role(agent_input: str) -> str:
    """The user's role from the input's `Role:` line ("" when absent)."""
    for line in agent_input.splitlines():
        if line.startswith("Role:"):
            return line.removeprefix("Role:").strip().lower()
    return ""
'''
PROGRAM = f"""action = ticket_action(agent_output)
role = ticket_role(agent_input)
if action["verb"] == "close" and action["priority"] == "urgent" and role != "on-call":
    deny([{RULE!r}], "an urgent ticket closed by " + role)
else:
    allow("the rule does not apply or the user is on call")
"""
BAD_INPUT = "Task: tidy the queue\nRole: intern"
BAD_OUTPUT = "looked at the queue\nACTION: close urgent"
GOOD_OUTPUT = "looked at the queue\nACTION: close low"


def _profile(root: Path, name: str = "tickets") -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "ticket_tools.py").write_text(READER)
    demos = [
        {
            "id": "intern-closes-urgent",
            "agent_input": BAD_INPUT,
            "agent_output": BAD_OUTPUT,
            "label": 1,
            "details": [RULE],
            "plan": "read action and role",
            "code": PROGRAM,
        },
        {
            "id": "intern-closes-low",
            "agent_input": BAD_INPUT,
            "agent_output": GOOD_OUTPUT,
            "label": 0,
            "plan": "read action and role",
            "code": PROGRAM,
        },
    ]
    (folder / "demonstrations.jsonl").write_text("".join(json.dumps(d) + "\n" for d in demos))
    (folder / "profile.yaml").write_text(
        f"name: {name}\nguard_request: 'Deny an urgent ticket closed by anyone not on call: "
        f'"{RULE}".\'\n'
        "agent_specification: A helpdesk agent's log.\n"
        "toolbox_modules: [ticket_tools.py]\n"
        "toolbox: [ticket_action, ticket_role]\ndemonstrations: demonstrations.jsonl\n"
    )
    return folder


def test_the_api_runs_a_program_over_the_profiles_own_reader(tmp_path: Path) -> None:
    folder = _profile(tmp_path)
    profile = load_profile(str(folder))
    assert [s.name for s in profile.tools()] == ["ticket_action", "ticket_role"]
    assert toolbox_refs(profile.tools()) is None  # not built-ins: forked from the caller
    guard = GuardAgent(profile=str(folder), memory_dir=str(tmp_path / "memory"))
    denied = guard.check(BAD_INPUT, BAD_OUTPUT)
    assert denied.allowed is False and denied.violations == [RULE]
    assert denied.program_source == "memory" and denied.llm_calls == 0
    allowed = guard.check(BAD_INPUT, GOOD_OUTPUT)
    assert allowed.allowed is True, allowed.reason
    unread = guard.check(BAD_INPUT, "no action at all")  # the module's reader fails closed
    assert unread.allowed is False and "no ACTION line" in unread.reason


def test_the_cli_loads_the_same_module_in_a_fresh_process(tmp_path: Path) -> None:
    folder = _profile(tmp_path)
    exe = Path(sys.executable).parent / "guardagent"
    env = {k: v for k, v in os.environ.items() if not k.startswith("GUARDAGENT_")}
    proc = subprocess.run(
        [
            exe,
            "check",
            "--profile",
            str(folder),
            "--memory-dir",
            str(tmp_path / "memory"),
            "--input",
            BAD_INPUT,
            "--output",
            BAD_OUTPUT,
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr  # denied
    decision = json.loads(proc.stdout)
    assert decision["allowed"] is False and decision["violations"] == [RULE]


def test_the_served_graph_loads_a_registered_profiles_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _profile(tmp_path)
    monkeypatch.setenv("GUARDAGENT_PROFILES", f"tickets={folder}")
    monkeypatch.setenv("GUARDAGENT_MEMORY_DIR", str(tmp_path / "memory"))
    monkeypatch.delenv("GUARDAGENT_MODEL", raising=False)
    from guardagent.integrations.server import served_graph

    out = served_graph().invoke(
        {"agent_input": BAD_INPUT, "agent_output": BAD_OUTPUT}, context={"profile": "tickets"}
    )
    assert out["guard_decision"].violations == [RULE]


def test_a_profile_a_run_names_by_path_never_runs_its_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "module-ran"
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "evil_tools.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (folder / "profile.yaml").write_text(
        "guard_request: r\nagent_specification: s\ntoolbox_modules: [evil_tools.py]\n"
        "toolbox: []\ndemonstrations: []\n"
    )
    monkeypatch.delenv("GUARDAGENT_PROFILES", raising=False)
    monkeypatch.setenv("GUARDAGENT_MEMORY_DIR", str(tmp_path / "memory"))
    out = (
        build_graph()
        .compile()
        .invoke(
            {"agent_input": BAD_INPUT, "agent_output": GOOD_OUTPUT},
            context={"profile": str(folder)},
        )
    )
    decision = out["guard_decision"]
    assert decision.allowed is False and "not a profile this deployment serves" in decision.reason
    assert not marker.exists()
    load_profile(str(folder))  # the deployment itself may load it
    assert marker.exists()


def test_a_module_reader_must_name_its_parameter_after_the_event(tmp_path: Path) -> None:
    folder = tmp_path / "loose"
    folder.mkdir()
    (folder / "loose_tools.py").write_text(
        "from guardagent.tools import guard_tool\n\n"
        "@guard_tool\ndef word_count(text: str) -> int:\n"
        '    """Words in a text (not a reader: its parameter is not agent_output)."""\n'
        "    return len(text.split())\n"
    )
    (folder / "profile.yaml").write_text(
        "guard_request: r\nagent_specification: s\ntoolbox_modules: [loose_tools.py]\n"
        "toolbox: [ticket_action, word_count]\ndemonstrations: []\n"
    )
    _profile(tmp_path)  # registers ticket_action
    load_profile(str(tmp_path / "tickets"))
    tools = load_profile(str(folder)).tools()
    errors = check_dataflow("n = word_count(agent_output)\nallow('ok')\n", tools)
    assert errors and "word_count(), which is not a reader" in errors[0]
    assert check_dataflow("a = ticket_action(agent_output)\nallow('ok')\n", tools) == []


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        ("[../outside.py]", "must be inside the profile's folder"),
        ("[missing.py]", "no such file"),
        ("[no_such_package_xyz.tools]", "cannot be imported"),
        ("[broken.py]", "failed to load: ZeroDivisionError"),
        ("my_tools.py", "must be a list"),
        ("['not a module']", "not a dotted module name"),
    ],
)
def test_bad_toolbox_modules_are_named(tmp_path: Path, modules: str, message: str) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (tmp_path / "outside.py").write_text("x = 1\n")
    (folder / "broken.py").write_text("x = 1 / 0\n")
    (folder / "profile.yaml").write_text(
        f"guard_request: r\nagent_specification: s\ntoolbox_modules: {modules}\n"
        "toolbox: []\ndemonstrations: []\n"
    )
    with pytest.raises(ProfileError, match=message) as info:
        load_profile(str(folder))
    assert str(folder) in str(info.value)


def test_a_dotted_module_and_the_fingerprint(tmp_path: Path) -> None:
    folder = _profile(tmp_path)
    base = load_profile(str(folder))
    (folder / "profile.yaml").write_text(
        (folder / "profile.yaml")
        .read_text()
        .replace(
            "toolbox_modules: [ticket_tools.py]",
            "toolbox_modules: [ticket_tools.py, guardagent.tools.rules]",
        )
    )
    dotted = load_profile(str(folder))
    assert dotted.toolbox_modules == ["ticket_tools.py", "guardagent.tools.rules"]
    assert dotted.fingerprint != base.fingerprint  # programs are keyed by the modules too
