"""One reading of JSON documents (`guardagent.readers.textio.load_json`), said one way.

The same block (json.loads; a syntax error, bytes that are no text, nesting deeper than the
parser's recursion, each turned into one line) was written four times: the decision reader
of `explain`, the CLI's state files, the trace reader and the task file. Every consumer now
reads through one helper, so a failure is one `ValueError` line, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from guardagent.readers.textio import UnreadableJson, load_json

DEEP = "[" * 200_000 + "]" * 200_000
BAD: list[tuple[str | bytes, str]] = [
    ("", "syntax"),
    ("{", "syntax"),
    ("{'a': 1}", "syntax"),
    ('{"a": 1,}', "syntax"),
    ("[1, 2", "syntax"),
    ("nan-ish", "syntax"),
    ('{"a": "\\x"}', "syntax"),
    (b"\x80\x81\x82\x83", "encoding"),
    (b'{"a": "\xc3\x28"}', "encoding"),
    (DEEP, "depth"),
    (DEEP.encode(), "depth"),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, "depth"),
]
GOOD: list[str | bytes] = [
    "{}",
    "[]",
    '{"a": [1, 2.5, null, true]}',
    "\ufeff{}".encode(),
    '{"a": 1}'.encode("utf-16"),
    '"text"',
]


@pytest.mark.parametrize(("data", "kind"), BAD)
def test_every_failure_is_one_line_of_its_kind(data: str | bytes, kind: str) -> None:
    with pytest.raises(UnreadableJson) as info:
        load_json(data)
    assert info.value.kind == kind
    assert str(info.value) == f"not JSON: {info.value.detail}"
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("data", GOOD)
def test_json_in_any_unicode_encoding_reads(data: str | bytes) -> None:
    load_json(data.removeprefix(b"\xef\xbb\xbf") if isinstance(data, bytes) else data)


@pytest.mark.parametrize(("data", "kind"), BAD)
def test_the_decision_reader_says_what_the_helper_says(data: str | bytes, kind: str) -> None:
    from guardagent.explain.reading import UnreadableDecision, read_decision

    raw = data.encode() if isinstance(data, str) else data
    with pytest.raises(UnreadableDecision) as info:
        read_decision(raw)
    with pytest.raises(UnreadableJson) as helper:
        load_json(raw)
    assert str(info.value) == str(helper.value)


@pytest.mark.parametrize(("data", "kind"), BAD)
def test_a_state_file_that_does_not_read_is_one_line(
    tmp_path: Path, data: str | bytes, kind: str
) -> None:
    from guardagent.cli import _json_file

    raw = data.encode() if isinstance(data, str) else data
    path = tmp_path / "state.json"
    path.write_bytes(raw)
    with pytest.raises(ValueError) as info:
        _json_file(path)
    with pytest.raises(UnreadableJson) as helper:
        load_json(raw)
    assert str(info.value) == str(helper.value)


@pytest.mark.parametrize(("data", "kind"), [b for b in BAD if isinstance(b[0], str)])
def test_a_trace_that_does_not_read_is_denied_with_the_helpers_words(data: str, kind: str) -> None:
    from guardagent.readers.evidence import UnreadableEvidence
    from guardagent.trace import parse_trace

    with pytest.raises(UnreadableEvidence) as info:
        parse_trace(data)
    assert info.value.reason == "unparsable_trace"
    if data.strip():
        with pytest.raises(UnreadableJson) as helper:
            load_json(data)
        assert helper.value.detail in str(info.value)


def test_a_task_file_nested_too_deep_is_refused_in_one_line() -> None:
    from guardagent.policy.task_file import TaskFileError, parse_task_text

    with pytest.raises(TaskFileError, match="nested too deep to read"):
        parse_task_text(DEEP, "deep.json")
