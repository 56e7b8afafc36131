from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from environments.sandboxes.protocol import Forward, SandboxLimits, new_name, owner_alive, owner_tag


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"memory_mb": 0}, "memory_mb"), ({"max_processes": 1.5}, "max_processes"), ({"cpus": 0}, "cpus")],
)
def test_limits_reject_bad_values_naming_the_field(changes, field):
    with pytest.raises(ValueError, match=f"sandbox.{field}="):
        SandboxLimits(**changes)


def test_forward_checks_its_port_and_names_the_inside_socket():
    assert Forward(8000, Path("/run/guard.sock")).inside_socket == "/run/forward/8000.sock"
    with pytest.raises(ValueError, match="forward.port"):
        Forward(0, Path("/run/guard.sock"))


def test_names_carry_a_live_owner_and_a_dead_owner_is_recognised():
    name = new_name("hsbx")
    assert name.startswith(f"hsbx-{owner_tag()}-") and owner_alive(name, "hsbx")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    dead = f"hsbx-{owner_tag(child.pid)}-abcd"
    assert owner_alive(dead, "hsbx")
    child.kill()
    child.wait()
    assert not owner_alive(dead, "hsbx")


def test_a_reused_pid_with_another_start_time_counts_as_dead():
    assert not owner_alive(f"hsbx-{os.getpid()}.1-abcd", "hsbx")


def test_names_of_other_prefixes_or_unparseable_names_are_left_alone():
    assert owner_alive("other-1.1-abcd", "hsbx")
    assert owner_alive("hsbx-garbage", "hsbx")
