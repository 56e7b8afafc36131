from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from environments.core.types import AnswerOracle, CommandOracle, Limits, Reference
from environments.tasks.checks import (
    CheckName,
    check_no_leakage,
    check_well_formed,
    run_checks,
)
from tests.environments.tasks.taskutil import BUGGY, CHECK, CSV, FIXED, answer_task, repo_task


def failures(task) -> dict[str, str]:
    return {r.name.value: r.reason for r in run_checks(task) if not r.passed}


@pytest.mark.parametrize("make", [repo_task, answer_task])
def test_good_tasks_pass_all_seven_checks(make):
    results = run_checks(make())
    assert [r.name for r in results] == list(CheckName)
    assert [(r.name.value, r.reason) for r in results if not r.passed] == []


def test_well_formed_catches_an_oracle_naming_a_missing_file_and_unparsable_python():
    task = repo_task(
        oracle=CommandOracle("python verify/missing.py"), hidden={"verify/check_calc.py": b"def ("}
    )
    reason = check_well_formed(task).reason
    assert "verify/missing.py" in reason and "does not parse" in reason


def test_well_formed_catches_an_instruction_that_never_names_the_answer_file():
    result = check_well_formed(answer_task(instruction="What is the total price?"))
    assert not result.passed and "answer.txt" in result.reason


def test_reference_that_fails_the_oracle_is_caught():
    broken = repo_task(reference=Reference(files={"calc.py": b"def add(a, b):\n    return a * b\n"}))
    assert set(failures(broken)) == {"reference_passes"}
    crashing = answer_task(
        reference=Reference(files={"solve.py": b"raise SystemExit(2)\n"}, command="python solve.py")
    )
    assert "reference command exited 2" in failures(crashing)["reference_passes"]


def test_an_already_solved_start_state_is_caught():
    solved = repo_task(workspace={"calc.py": FIXED})
    reasons = failures(solved)
    assert "already solved" in reasons["start_fails"]


def test_an_answer_file_shipped_in_the_workspace_is_caught_twice():
    reasons = failures(answer_task(workspace={"data.csv": b"item,price\n", "answer.txt": b"46.85\n"}))
    assert "already solved" in reasons["start_fails"]
    assert "already in the workspace" in reasons["no_leakage"]


def test_a_nondeterministic_oracle_is_caught(tmp_path: Path):
    counter = tmp_path / "runs"
    # Passes on the fixed code only every other time: a stand-in for a flaky test or a time-dependent check.
    flaky = (
        CHECK
        + f"""
from pathlib import Path
counter = Path({str(counter)!r})
runs = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(runs + 1))
assert runs % 2 == 0, "flaky"
""".encode()
    )
    reasons = failures(repo_task(hidden={"verify/check_calc.py": flaky}))
    assert "verdicts pass then fail" in reasons["deterministic"]


def test_an_answer_in_the_instruction_is_a_leak():
    leaky = answer_task(instruction="The total of `price` is 46.85. Write it to `answer.txt`.")
    result = check_no_leakage(leaky)
    assert not result.passed and "instruction contains the expected answer '46.85'" in result.reason


def test_an_answer_in_a_notes_file_or_the_environment_is_a_leak_but_not_in_the_data():
    assert check_no_leakage(answer_task(workspace={"data.csv": b"x\n46.85\n"})).passed
    notes = answer_task(workspace={"data.csv": b"x\n", "NOTES.md": b"sanity check: 46.85\n"})
    assert "workspace/NOTES.md" in check_no_leakage(notes).reason
    env = answer_task(env={"EXPECTED_TOTAL": "46.85"})
    assert "env EXPECTED_TOTAL" in check_no_leakage(env).reason


def test_hidden_tests_or_the_reference_copied_into_the_workspace_are_leaks():
    copied = repo_task(workspace={"calc.py": BUGGY, "tests/check.py": CHECK})
    assert "copy of hidden file verify/check_calc.py" in check_no_leakage(copied).reason
    line = repo_task(instruction="Make this pass: assert calc.add(2, 3) == 5, 'add(2, 3) should be 5'")
    assert "instruction contains hidden line" in check_no_leakage(line).reason
    reference = repo_task(
        workspace={"calc.py": BUGGY, "backup/calc_fixed.py": FIXED * 2},
        reference=Reference(files={"calc.py": FIXED * 2}),
    )
    assert "copy of reference file calc.py" in check_no_leakage(reference).reason


def test_a_reference_over_the_time_limit_is_caught():
    slow = answer_task(
        reference=Reference(files={"solve.py": b"import time\ntime.sleep(5)\n"}, command="python solve.py"),
        limits=Limits(agent_timeout_s=0.5, verify_timeout_s=5),
    )
    assert "agent_timeout_s=0.5" in failures(slow)["within_limits"]


def test_a_reference_over_the_memory_limit_is_caught():
    hungry = answer_task(
        reference=Reference(
            files={"solve.py": b"b = bytearray(200 * 1024 * 1024)\nopen('answer.txt', 'w').write('46.85')\n"},
            command="python solve.py",
        ),
        limits=Limits(agent_timeout_s=20, verify_timeout_s=20, memory_mb=64),
    )
    reasons = failures(hungry)
    assert set(reasons) == {"within_limits"} and "memory_mb=64" in reasons["within_limits"]


def test_a_crashing_runner_gives_failed_results_not_an_exception():
    class Broken:
        def run(self, *args, **kwargs):
            raise RuntimeError("sandbox unavailable")

    results = run_checks(repo_task(), runner=Broken())
    assert len(results) == len(CheckName)
    # The verifier turns the crash into verdict `error` (it never raises), which the checks report.
    crashed = {r.name.value for r in results if "RuntimeError: sandbox unavailable" in r.reason}
    assert crashed == {"reference_passes", "start_fails", "deterministic"}
    assert not any(r.passed for r in results if r.name.value in crashed)


def test_checks_that_crash_alike_name_the_first_instead_of_repeating_its_message(monkeypatch):
    """A task image that did not build crashes several checks with one long build log: it is said once."""
    from environments.tasks import checks

    def crash(*args, **kwargs):
        raise RuntimeError("the image did not build; log: " + "x" * 500)

    monkeypatch.setattr(checks, "check_well_formed", crash)
    monkeypatch.setattr(checks, "check_no_leakage", crash)
    reasons = {r.name.value: r.reason for r in run_checks(repo_task())}
    assert reasons["well_formed"].startswith("check crashed: RuntimeError: the image did not build")
    assert reasons["no_leakage"] == "check crashed: the same as well_formed"


@pytest.mark.parametrize(
    "written",
    ["46.850", "4.685e1", "46.8512", "46.9", "(46.85)", "total=46.85;"],
)
def test_the_numeric_answer_leaks_in_any_format_that_rounds_to_it_or_would_pass(written):
    notes = answer_task(
        workspace={"data.csv": CSV, "NOTES.md": f"last run gave {written} overall\n".encode()}
    )
    result = check_no_leakage(notes)
    assert not result.passed and "workspace/NOTES.md contains the expected answer" in result.reason


@pytest.mark.parametrize("written", ["46.7", "4685", "12.50", "46.95", "46", "0.4685"])
def test_numbers_that_neither_round_to_the_answer_nor_pass_are_not_leaks(written):
    notes = answer_task(
        workspace={"data.csv": CSV, "NOTES.md": f"last run gave {written} overall\n".encode()}
    )
    assert check_no_leakage(notes).passed, written


def test_a_fraction_answer_written_as_a_percentage_and_back_is_a_leak():
    rate = AnswerOracle(expected=0.1234, abs_tol=1e-4)
    for written in ("12.34%", "12.34 %", "12.3 percent"):
        task = answer_task(oracle=rate, instruction=f"Write the rate to answer.txt (last year: {written}).")
        assert "instruction contains the expected answer" in check_no_leakage(task).reason, written
    percent = AnswerOracle(expected=12.34, abs_tol=0.01)
    task = answer_task(oracle=percent, instruction="Write the rate in percent to answer.txt.")
    assert check_no_leakage(task).passed
    task = replace(task, env={"RATE_HINT": "0.1234"})
    assert "env RATE_HINT contains the expected answer '0.1234'" in check_no_leakage(task).reason
    # without "percent" in the instruction a fraction is not read as a percentage (0.4685 is no 46.85)
    assert check_no_leakage(replace(task, instruction="Write the rate to answer.txt.")).passed
    assert check_no_leakage(
        answer_task(oracle=rate, instruction="Write it to answer.txt; 12.5% is wrong.")
    ).passed


def test_an_answer_rounded_to_the_tolerance_is_a_leak_but_a_value_outside_it_is_not():
    oracle = AnswerOracle(expected=0.123456, abs_tol=1e-3)
    for written, leaks in (("0.1235", True), ("0.123", True), ("0.1239", True), ("0.125", False)):
        task = answer_task(oracle=oracle, env={"PREVIOUS": f"{{'score': {written}}}"})
        assert check_no_leakage(task).passed is not leaks, written


def test_a_text_answer_with_other_spacing_or_case_is_a_leak():
    oracle = AnswerOracle(expected="North  America")
    task = answer_task(oracle=oracle, workspace={"data.csv": CSV, "hint.txt": b"try north\namerica\n"})
    assert "workspace/hint.txt contains the expected answer" in check_no_leakage(task).reason


def test_a_reformatted_hidden_assert_line_or_test_file_in_the_workspace_is_a_leak():
    line = b'assert calc.add(2,3)==5, "add(2, 3) should be 5"\n'
    task = repo_task(workspace={"calc.py": BUGGY, "tests/test_calc.py": line})
    assert "workspace/tests/test_calc.py contains hidden line" in check_no_leakage(task).reason
    reformatted = CHECK.replace(b"\n", b"\r\n").replace(b"'", b'"')
    task = repo_task(workspace={"calc.py": BUGGY, "tests/check.py": reformatted})
    assert "copy of hidden file verify/check_calc.py" in check_no_leakage(task).reason


OPERATOR_FIX = b"import operator\n\n\ndef add(a, b):\n    return operator.add(a, b)  # plain addition\n"


def test_the_references_changed_lines_in_the_start_workspace_are_a_leak():
    diff = (
        b"--- a/calc.py\n+++ b/calc.py\n-    return a - b\n+    return operator.add(a, b)  # plain addition\n"
    )
    task = repo_task(
        workspace={"calc.py": BUGGY, "patches/fix.diff": diff},
        reference=Reference(files={"calc.py": OPERATOR_FIX}),
    )
    assert "workspace/patches/fix.diff contains the reference's change" in check_no_leakage(task).reason
    hinted = repo_task(
        instruction="Fix add; hint: return operator.add(a,b) # plain addition",
        reference=Reference(files={"calc.py": OPERATOR_FIX}),
    )
    assert "instruction contains the reference's change" in check_no_leakage(hinted).reason


def test_lines_the_reference_keeps_or_that_are_too_generic_are_not_leaks():
    keeps = repo_task(
        workspace={"calc.py": BUGGY, "README.md": b"# calc\n\ndef add(a, b):\nimport operator\n"},
        reference=Reference(files={"calc.py": OPERATOR_FIX}),
    )
    assert check_no_leakage(keeps).passed, check_no_leakage(keeps).reason
    short_fix = repo_task(workspace={"calc.py": BUGGY, "other.py": b"def mul(a, b):\n    return a + b\n"})
    assert check_no_leakage(short_fix).passed


def test_an_oracle_that_trusts_an_exit_status_is_not_hack_resistant():
    """A checker that imports the solution and passes on exit status 0 is fooled by code that exits 0 when
    imported; the seventh check names the attempt."""
    weak = repo_task(oracle=CommandOracle("python verify/check_calc.py"))
    assert "exit_at_import" in failures(weak)["hack_resistant"]
