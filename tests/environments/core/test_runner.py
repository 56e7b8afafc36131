from __future__ import annotations

import sys
import time

from environments.core.runner import SubprocessRunner


def run(cmd, tmp_path, timeout_s=10.0, memory_mb=512, env=None):
    return SubprocessRunner().run(cmd, tmp_path, timeout_s=timeout_s, memory_mb=memory_mb, env=env)


def test_exit_status_and_output_come_back(tmp_path):
    result = run("echo hi; exit 3", tmp_path)
    assert (result.exit_code, result.timed_out, result.ok) == (3, False, False)
    assert result.output_tail.strip() == "hi"


def test_python_on_path_is_this_interpreter_and_env_is_passed(tmp_path):
    command = 'python -c "import sys; print(sys.executable)"; echo "$GREETING"'
    result = run(command, tmp_path, env={"GREETING": "yo"})
    assert result.output_tail.split() == [sys.executable, "yo"]


def test_a_command_past_its_time_is_killed_with_its_children(tmp_path):
    start = time.monotonic()
    result = run("sleep 30 & sleep 30", tmp_path, timeout_s=0.5)
    assert result.timed_out and result.exit_code is None and not result.ok
    assert time.monotonic() - start < 5


def test_peak_memory_is_measured_and_the_address_space_is_capped(tmp_path):
    grow = run('python -c "b = bytearray(150 * 1024 * 1024); print(len(b))"', tmp_path, memory_mb=1024)
    assert grow.ok and grow.peak_rss_mb >= 140
    capped = run('python -c "b = bytearray(3 * 1024 ** 3)"', tmp_path, memory_mb=256)
    assert capped.exit_code != 0 and "MemoryError" in capped.output_tail
