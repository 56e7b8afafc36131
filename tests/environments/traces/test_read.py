"""Format detection, folders, and files that cannot be read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import environments.traces as traces
from environments.traces import TraceFormat, read_text, read_traces
from environments.traces.read import parse_records

DATA = Path(__file__).parent / "data"
SAMPLES = {
    "pi-session-sample.jsonl": TraceFormat.PI_SESSION,
    "pi-mode-json-stdout.jsonl": TraceFormat.PI_EVENTS,
    "oc-session-export.json": TraceFormat.OPENCODE_EXPORT,
    "oc-format-json-stdout.jsonl": TraceFormat.OPENCODE_EVENTS,
    "hermes-session-export.jsonl": TraceFormat.HERMES_EXPORT,
}


@pytest.mark.parametrize(("name", "expected"), SAMPLES.items())
def test_each_sample_s_format_is_detected_from_its_content(name: str, expected: TraceFormat):
    records, _ = parse_records((DATA / name).read_text(), source=name)
    assert traces.detect_format([r for _, r in records]) == expected


def test_a_folder_is_read_file_by_file_and_odd_files_are_skipped(tmp_path: Path):
    for name in SAMPLES:
        shutil.copy(DATA / name, tmp_path / name)
    (tmp_path / "notes.json").write_text(json.dumps({"hello": "world"}))
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "binary.jsonl").write_bytes(b"\xff\xfe")
    (tmp_path / "readme.txt").write_text("not a trace")
    conversations, skipped = read_traces(tmp_path, prompt="Run echo and tell me the result")
    assert sorted(c.harness for c in conversations) == ["hermes", "opencode", "opencode", "pi", "pi"]
    assert sorted((Path(s.source).name, s.reason) for s in skipped) == [
        ("binary.jsonl", "unreadable_file"),
        ("empty.jsonl", "empty_file"),
        ("notes.json", "unknown_format"),
    ]


def test_a_given_format_overrides_detection_and_an_unknown_one_raises():
    text = (DATA / "oc-session-export.json").read_text()
    conversations, skipped = read_text(text, source="x", format="atif")
    assert conversations == [] and [s.reason for s in skipped] == ["missing_field:steps"]
    with pytest.raises(ValueError):
        read_traces(DATA, format="claude")


def test_wrong_types_inside_a_record_are_skipped_not_raised():
    record = {"messages": [{"role": "user", "content": 5}, {"role": "assistant", "content": "x"}]}
    assert [s.reason for s in read_text(json.dumps(record), source="x")[1]] == ["invalid_content"]
    export = json.loads((DATA / "oc-session-export.json").read_text())
    export["messages"][1]["parts"] = "nope"
    assert [s.reason for s in read_text(json.dumps(export), source="x")[1]] == ["missing_field:parts"]


def test_all_is_sorted_and_resolves():
    assert traces.__all__ == sorted(traces.__all__)
    assert all(hasattr(traces, name) for name in traces.__all__)
