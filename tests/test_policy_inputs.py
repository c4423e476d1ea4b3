"""Policy commands read their files like every other input: any text encoding, one-line errors."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from guardagent.authoring.documents import read_document
from guardagent.authoring.replay import ReplayChatModel
from guardagent.cli import main
from guardagent.policy.model import policy_path

POLICY_TEXT = (
    policy_path("assistant-trace").read_text(encoding="utf-8")
    if policy_path("assistant-trace").is_file()
    else (Path(__file__).parent / "traces" / "assistant_policy.yaml").read_text(encoding="utf-8")
)
ENCODINGS = {
    "utf-16": lambda t: t.encode("utf-16"),
    "utf-16-le-no-bom": lambda t: t.encode("utf-16-le"),
    "utf-32": lambda t: t.encode("utf-32"),
    "utf-8-bom": lambda t: codecs.BOM_UTF8 + t.encode("utf-8"),
}


def policy(cmd: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["policy", *cmd])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_policy_commands_read_any_text_encoding(encoding: str, tmp_path: Path) -> None:
    plain = tmp_path / "plain.yaml"
    plain.write_text(POLICY_TEXT, encoding="utf-8")
    other = tmp_path / f"{encoding}.yaml"
    other.write_bytes(ENCODINGS[encoding](POLICY_TEXT))
    code, out = policy(["check", str(other)])
    assert code == 0 and "OK: 0 error(s), 0 warning(s)" in out, out
    assert policy(["verify", str(other)])[1] == policy(["verify", str(plain)])[1]
    code, out = policy(["diff", str(plain), str(other)])
    assert code == 0 and "no changes" in out, out
    code, out = policy(["review", str(other), "--all"])
    assert code == 0 and "Traceback" not in out, out


@pytest.mark.parametrize("command", [["check"], ["verify"], ["review"], ["diff", "X"]])
def test_a_directory_where_a_policy_file_is_expected_says_so(
    command: list[str], tmp_path: Path
) -> None:
    args = [str(tmp_path) if a == "X" else a for a in command]
    code, out = policy([*args, str(tmp_path)])
    assert code != 0 and f"{tmp_path}: is a directory; give a file" in out, out
    assert "Traceback" not in out


def test_bytes_that_are_not_text_are_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(POLICY_TEXT.encode("utf-8") + b"\n# \xff\xfe\xfa\n")
    code, out = policy(["check", str(bad)])
    assert code == 2 and "not valid UTF-8 (3 undecodable byte sequence(s))" in out, out


def test_documents_and_replay_answers_read_any_encoding(tmp_path: Path) -> None:
    doc = tmp_path / "rules.md"
    doc.write_bytes("# Rules\n\nNever send money abroad.\n".encode("utf-16"))
    assert "Never send money abroad." in json.dumps([s.text for s in read_document(doc)])
    answers = tmp_path / "answers.json"
    answers.write_bytes(json.dumps({"k": "v"}).encode("utf-32"))
    assert ReplayChatModel.from_file(answers).answers == {"k": "v"}
    with pytest.raises(ValueError, match="is a directory"):
        ReplayChatModel.from_file(tmp_path)
