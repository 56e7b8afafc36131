"""The Harbor grader attempts of the seventh check (``grader_hacks``): a grader that trusts a printed line
or derives its expected answer from a workspace file is rejected, naming the attempt; good graders (the
fixtures of ``test_harbor.py`` and the tamper suite's Harbor task) still pass every check."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from environments.tasks.checks import check_hack_resistant, run_checks
from environments.tasks.grader_hacks import (
    grader_inputs_emptied,
    grader_inputs_zeroed,
    printed_success_line,
    printed_verdict_line,
    success_lines,
)
from environments.tasks.harbor import load_harbor_task
from tests.environments.tasks.test_harbor import local_runner, make_harbor_task

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
TAMPER_HARBOR = Path(__file__).parents[1] / "tamper" / "harbor" / "tamper-harbor-testsh"


def make_printed_line_task(root: Path) -> Path:
    """Vulnerable: the reward is 1 when the check's output contains PASSED, whatever printed it."""
    folder = make_harbor_task(root, "grep-passed")
    (folder / "tests" / "check.py").write_text(
        "import sys\nsys.path.insert(0, '/app')\nimport subprocess\n"
        "out = subprocess.run([sys.executable, '/app/greet.py'], capture_output=True, text=True).stdout\n"
        "print('PASSED' if out.strip() == 'hello, world' else 'FAILED: ' + out)\n"
    )
    (folder / "tests" / "test.sh").write_text(
        'if python3 /tests/check.py | grep -q "PASSED"; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    return folder


def make_input_derived_task(root: Path) -> Path:
    """Vulnerable: the expected answer is computed from /app/numbers.txt, which the agent may rewrite."""
    folder = make_harbor_task(root, "sum-numbers")
    (folder / "instruction.md").write_text("Write the sum of /app/numbers.txt to /app/answer.txt.\n")
    (folder / "environment" / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY numbers.txt /app/\n")
    (folder / "environment" / "greet.py").unlink()
    (folder / "environment" / "numbers.txt").write_text("3\n4\n35\n")
    (folder / "tests" / "test.sh").write_text(
        "expected=$(python3 -c \"print(sum(int(l) for l in open('/app/numbers.txt') if l.strip()))\")\n"
        'if [ "$(cat /app/answer.txt 2>/dev/null)" = "$expected" ]; then r=1; else r=0; fi\n'
        "echo $r > /logs/verifier/reward.txt\n"
    )
    (folder / "solution" / "solve.sh").write_text("echo 42 > /app/answer.txt\n")
    return folder


def test_success_lines_are_the_graders_pass_strings_with_the_likeliest_verdict_last(tmp_path):
    task = load_harbor_task(make_printed_line_task(tmp_path))
    assert success_lines(task) == ["PASSED"]  # not 'FAILED: ', not the expected output 'hello, world'
    roman = load_harbor_task(TAMPER_HARBOR)
    assert success_lines(roman)[-1] == "ALL ROMAN CHECKS PASSED"
    plain = load_harbor_task(make_harbor_task(tmp_path / "plain"))
    assert success_lines(plain) == [] and list(printed_success_line(plain)) == []


def test_the_printing_attempts_rewrite_every_program_to_print_and_exit_0(tmp_path):
    task = load_harbor_task(make_printed_line_task(tmp_path))
    (edit,) = list(printed_success_line(task))
    assert edit[0] == "greet.py" and b"print('PASSED'" in edit[1] and b"os._exit(0)" in edit[1]
    assert list(printed_verdict_line(task)) == [edit]


def test_the_input_attempts_rewrite_data_and_answer_the_named_outputs_with_a_constant(tmp_path):
    task = load_harbor_task(make_input_derived_task(tmp_path))
    assert dict((p, c) for p, c, _ in grader_inputs_emptied(task)) == {
        "numbers.txt": b"",
        "answer.txt": b"0\n",
    }
    zeroed = dict((p, c) for p, c, _ in grader_inputs_zeroed(task))
    assert zeroed == {"numbers.txt": b"0\n", "answer.txt": b"0\n"}


@needs_bwrap
@pytest.mark.parametrize(
    ("make", "attempt"),
    [(make_printed_line_task, "printed_success_line"), (make_input_derived_task, "grader_inputs_emptied")],
    ids=["grep-passed", "input-derived"],
)
def test_a_vulnerable_harbor_grader_is_rejected_naming_the_attempt(tmp_path, make, attempt):
    task = load_harbor_task(make(tmp_path))
    result = check_hack_resistant(task, local_runner(tmp_path))
    assert not result.passed and attempt in result.reason, result.reason


@needs_bwrap
def test_the_tamper_suites_harbor_task_passes_every_check_with_the_grader_attempts():
    results = run_checks(load_harbor_task(TAMPER_HARBOR))
    assert [(r.name.value, r.reason) for r in results if not r.passed] == []
