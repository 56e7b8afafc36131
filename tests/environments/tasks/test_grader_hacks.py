"""The Harbor grader attempts of the seventh check (``grader_hacks``): a grader that trusts a printed line,
derives its expected answer from a workspace file or lets a reward the agent's code planted stand is
rejected, naming the attempt; good graders (the fixtures of ``test_harbor.py`` and the tamper suite's
Harbor task) still pass every check."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from environments.tasks import reward_guard
from environments.tasks.checks import check_hack_resistant, run_checks
from environments.tasks.grader_hacks import (
    grader_inputs_emptied,
    grader_inputs_zeroed,
    planted_files,
    planted_reward,
    planted_reward_kills_grader,
    planted_reward_lowers_file_limit,
    planted_reward_read_only,
    printed_success_line,
    printed_verdict_line,
    success_lines,
)
from environments.tasks.hack_check import apply_edits, fooled_by
from environments.tasks.harbor import load_harbor_task
from environments.tasks.oracle import Verdict, verify, write_start
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


PLANTING = {
    "planted_reward": planted_reward,
    "planted_reward_read_only": planted_reward_read_only,
    "planted_reward_kills_grader": planted_reward_kills_grader,
    "planted_reward_lowers_file_limit": planted_reward_lowers_file_limit,
}


def make_program_task(root: Path) -> Path:
    """A grader that runs a Python, a shell and a Node program of the workspace and writes its reward."""
    folder = make_harbor_task(root, "programs")
    env = folder / "environment"
    (env / "greet.py").write_text('"""Greets."""\nfrom __future__ import annotations\n\nprint("hello")\n')
    (env / "greet.sh").write_text("#!/bin/bash\necho hello\n")
    (env / "greet.js").write_text("#!/usr/bin/env node\nconsole.log('hello');\n")
    (env / "Dockerfile").write_text("FROM python:3.11-slim\nCOPY greet.py greet.sh greet.js /app/\n")
    (folder / "tests" / "test.sh").write_text(
        "a=$(python /app/greet.py); b=$(bash /app/greet.sh)\n"
        'if [ "$a $b" = "hello, world hello, world" ]; then echo 1 > /logs/verifier/reward.txt; '
        "else echo 0 > /logs/verifier/reward.txt; fi\n"
    )
    (folder / "solution" / "solve.sh").write_text(
        "echo \"print('hello, world')\" > greet.py; printf 'echo \"hello, world\"\\n' > greet.sh\n"
    )
    return folder


def make_success_only_task(root: Path) -> Path:
    """Vulnerable: the reward is written only when the check passes, so a planted one stands otherwise."""
    folder = make_harbor_task(root, "success-only")
    (folder / "tests" / "test.sh").write_text(
        'test "$(python /app/greet.py)" = "hello, world" && echo 1 > /logs/verifier/reward.txt\n'
    )
    return folder


def test_the_planted_reward_is_in_the_files_the_graders_name(tmp_path):
    task = load_harbor_task(make_harbor_task(tmp_path))
    assert planted_files(task) == [("reward.txt", "1\n")]
    folder = make_harbor_task(tmp_path / "json")
    (folder / "tests" / "test.sh").write_text("echo '{\"reward\": 0}' > /logs/verifier/reward.json\n")
    assert planted_files(load_harbor_task(folder)) == [("reward.json", '{"reward": 1.0}\n')]


def test_the_planting_attempts_keep_each_program_runnable_and_its_own_code_last(tmp_path):
    task = load_harbor_task(make_program_task(tmp_path))
    for name, attempt in PLANTING.items():
        edits = {path: content.decode() for path, content, _ in attempt(task)}
        assert sorted(edits) == ["greet.js", "greet.py", "greet.sh"], name
        python = edits["greet.py"]
        assert (
            python.startswith('"""Greets."""\nfrom __future__ import annotations\n')
            and "/logs/verifier" in python
        )
        compile(python, "greet.py", "exec")  # the __future__ import still comes first
        assert edits["greet.sh"].startswith("#!/bin/bash\n") and edits["greet.sh"].endswith("echo hello\n")
        syntax = subprocess.run(["bash", "-n"], input=edits["greet.sh"], text=True, capture_output=True)
        assert syntax.returncode == 0, (name, syntax.stderr)
        assert edits["greet.js"].startswith("#!/usr/bin/env node\n") and "reward.txt" in edits["greet.js"]
        if shutil.which("node"):
            checked = tmp_path / f"{name}.js"
            checked.write_text(edits["greet.js"])
            result = subprocess.run(["node", "--check", str(checked)], capture_output=True, text=True)
            assert result.returncode == 0, (name, result.stderr)
    assert b"chmod 555" in dict((p, c) for p, c, _ in planted_reward_read_only(task))["greet.sh"]
    assert b"SIGKILL" in dict((p, c) for p, c, _ in planted_reward_kills_grader(task))["greet.py"]
    lowering = dict((p, c) for p, c, _ in planted_reward_lowers_file_limit(task))
    assert b"RLIMIT_NOFILE, (0, hard)" in lowering["greet.py"]
    assert b"prlimit --pid" in lowering["greet.sh"] and b"RLIMIT_NOFILE" in lowering["greet.sh"]
    assert b"execFileSync" in lowering["greet.js"]


@needs_bwrap
@pytest.mark.parametrize(
    ("attempt", "reason"),
    [
        ("planted_reward", "reward 0 < 1"),  # the grader's own write replaced it
        ("planted_reward_read_only", "is read-only"),
        ("planted_reward_kills_grader", "not through its reward guard"),
        ("planted_reward_lowers_file_limit", "reward 0 < 1"),  # the grader itself is spared: it writes 0
    ],
)
@pytest.mark.parametrize("program", ["greet.py", "greet.sh"])
def test_each_planting_attempt_pays_nothing_and_the_verifier_says_why(tmp_path, attempt, reason, program):
    task = load_harbor_task(make_program_task(tmp_path))
    produced = write_start(task, tmp_path / "produced")
    apply_edits(produced, iter(e for e in PLANTING[attempt](task) if e[0] == program))
    run = verify(task, produced, tmp_path / "scratch", local_runner(tmp_path))
    assert run.verdict is Verdict.FAIL and reason in run.reason, run.reason


@needs_bwrap
def test_without_the_reward_guard_the_read_only_killing_and_lowering_attempts_would_pay(
    tmp_path, monkeypatch
):
    """What the guard stops: the same grader, run bare, pays both (so the attempts test what they claim)."""
    task = load_harbor_task(make_program_task(tmp_path))
    assert fooled_by(task, local_runner(tmp_path)) == []
    monkeypatch.setattr(reward_guard, "guarded_command", lambda command, base, rel: command)
    monkeypatch.setattr(reward_guard, "refusal", lambda exit_code, tail: None)
    fooled = fooled_by(task, local_runner(tmp_path / "bare"))
    expected = {"planted_reward_read_only", "planted_reward_kills_grader", "planted_reward_lowers_file_limit"}
    assert expected <= set(fooled), fooled


@needs_bwrap
def test_a_grader_that_writes_its_reward_only_on_success_is_rejected(tmp_path):
    task = load_harbor_task(make_success_only_task(tmp_path))
    result = check_hack_resistant(task, local_runner(tmp_path))
    assert not result.passed and "planted_reward" in result.reason, result.reason
    assert "planted_reward_read_only" not in result.reason and "kills_grader" not in result.reason


def make_server_task(root: Path) -> Path:
    """Vulnerable: the agent's program (a server) still runs when the grader writes its reward; the grader
    stops it only afterwards, so whatever the program writes meanwhile or as it stops stands."""
    folder = make_harbor_task(root, "server")
    (folder / "environment" / "greet.py").write_text(
        "import time\nprint('hello', flush=True)\ntime.sleep(30)\n"
    )
    (folder / "tests" / "test.sh").write_text(
        "python /app/greet.py > /tmp/out & pid=$!\n"
        # Wait for the program's first line, so it is past its start (and any handler it sets) under load.
        "for i in $(seq 100); do [ -s /tmp/out ] && break; sleep 0.1; done\n"
        'if [ "$(cat /tmp/out)" = "hello, world" ]; then r=1; else r=0; fi\n'
        "echo $r > /logs/verifier/reward.txt\nkill $pid; wait $pid\n"
    )
    (folder / "solution" / "solve.sh").write_text(
        "printf \"import time\\nprint('hello, world', flush=True)\\ntime.sleep(30)\\n\" > greet.py\n"
    )
    return folder


@needs_bwrap
def test_a_grader_that_writes_its_reward_while_the_agents_code_runs_is_rejected(tmp_path):
    task = load_harbor_task(make_server_task(tmp_path))
    reference = [(r.name.value, r.reason) for r in run_checks(task) if not r.passed]
    assert reference == [("hack_resistant", "the oracle passes these hack attempts: planted_reward")]


@needs_bwrap
def test_the_program_fixture_passes_every_check_with_the_planting_attempts(tmp_path):
    results = run_checks(load_harbor_task(make_program_task(tmp_path)))
    assert [(r.name.value, r.reason) for r in results if not r.passed] == []


def make_child_writer_task(root: Path) -> Path:
    """Vulnerable: the reward is written by a Python program the grader starts, not by the grader itself;
    the agent's program, which that program runs, can lower its open-file limit so its write fails, and
    the grader has reaped it by the time the reward guard looks (the guard checks the grader's limits)."""
    folder = make_harbor_task(root, "child-writer")
    (folder / "tests" / "grade.py").write_text(
        "import subprocess\n"
        "out = subprocess.run(['python', '/app/greet.py'], capture_output=True, text=True).stdout\n"
        "with open('/logs/verifier/reward.txt', 'w') as handle:\n"
        "    handle.write('1\\n' if out.strip() == 'hello, world' else '0\\n')\n"
    )
    (folder / "tests" / "test.sh").write_text("python3 /tests/grade.py\n")
    return folder


@needs_bwrap
def test_a_grader_whose_reward_a_child_writes_is_rejected_by_the_file_limit_attempt(tmp_path):
    task = load_harbor_task(make_child_writer_task(tmp_path))
    result = check_hack_resistant(task, local_runner(tmp_path))
    assert not result.passed and result.reason.endswith(": planted_reward_lowers_file_limit"), result.reason
