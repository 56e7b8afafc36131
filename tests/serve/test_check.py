"""`python -m serve.check`: the public corpus verdicts, output shape and malformed lines."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from guardcases import CORPUS, load_corpus, need

from serve.check import judge_line, run

CORPUS_CASES = load_corpus()
CATEGORY_RULE = {"undeclared_tool": "declared_tools", "host_not_in_conversation": "hosts"}


@pytest.mark.parametrize("case", CORPUS_CASES, ids=[c["id"] for c in CORPUS_CASES] or None)
def test_every_public_corpus_case_gets_its_expected_verdict(case: dict) -> None:
    result = judge_line(1, json.dumps(case))
    assert result is not None and result["verdict"] == case["expect"], case.get("note")
    if case["expect"] == "block":
        assert result["rule"] == CATEGORY_RULE.get(case["category"], case["category"])
    else:
        assert result["rule"] is None and result["reason"] is None


def test_corpus_is_present_or_skipped_with_reason() -> None:
    need(CORPUS_CASES, "guard corpus")
    assert len(CORPUS_CASES) >= 100


def test_malformed_lines_get_an_error_line_and_the_run_goes_on() -> None:
    good = {
        "id": "ok",
        "tools": [{"type": "function", "function": {"name": "bash"}}],
        "messages": [],
        "tool_call": {
            "id": "1",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "ls"}'},
        },
    }
    lines = [
        "{not json",
        json.dumps([1, 2]),
        json.dumps({"id": "m", "tools": [], "messages": "x", "tool_call": {}}),
        "",
        json.dumps({"id": "t", "tools": {}, "messages": [], "tool_call": {}}),
        json.dumps(good),
    ]
    out = io.StringIO()
    status = run(iter(lines), out)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert status == 2
    assert [r.get("error") for r in rows] == [
        "invalid_json",
        "case_not_object",
        "messages_not_list_of_objects",
        "tools_not_list",
        None,
    ]
    assert all("verdict" not in r for r in rows[:4])
    assert rows[-1] == {"id": "ok", "verdict": "allow", "rule": None, "reason": None}


def test_unparsable_arguments_are_blocked_and_the_input_is_never_echoed() -> None:
    case = {
        "id": "x",
        "tools": [{"type": "function", "function": {"name": "bash"}}],
        "messages": [],
        "tool_call": {
            "id": "1",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "SECRET'},
        },
    }
    line = json.dumps(judge_line(1, json.dumps(case)))
    assert '"verdict": "block"' in line and "arguments_not_json" in line and "SECRET" not in line


def test_cli_runs_as_a_module_on_the_corpus(tmp_path: Path) -> None:
    cases = need(CORPUS_CASES, "guard corpus")[:5]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(c) for c in cases) + "\nbroken\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "serve.check", str(path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r.get("id") for r in rows[:5]] == [c["id"] for c in cases]
    assert rows[5] == {"line": 6, "id": None, "error": "invalid_json"}
    assert done.returncode == 2


def test_missing_file_is_an_operator_error(tmp_path: Path) -> None:
    from serve.check import main

    assert main([str(tmp_path / "nope.jsonl")]) == 1
    assert CORPUS.name == "public.jsonl"
