"""A CPU trainer's allocator settings: under glibc's default, large blocks freed between live small ones
stay with the process; with large blocks mapped on their own (``map_large_blocks``), or with the heap
trimmed after them (``release_free_heap``), they go back to the host. Each setting runs in a child
process, so this test process's allocator is left as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors import cpu_memory

ROOT = Path(__file__).parents[2]

# 64 blocks of 4 MiB (a long row's activations are blocks of this size), each followed by a small live
# block that pins the heap's top; then the large ones are freed. Prints MiB held at the peak and after.
FRAGMENTS = """
import sys, psutil
from actors.cpu_memory import map_large_blocks, release_free_heap
if sys.argv[1] == "mapped":
    assert map_large_blocks(True)
MIB = 1024 * 1024
rss = lambda: psutil.Process().memory_info().rss
first = bytearray(16 * MIB); del first  # a freed mapped block: glibc's dynamic threshold rises to it
before = rss()
blocks, pins = [], []
for _ in range(64):
    block = bytearray(4 * MIB)
    block[::4096] = bytes(MIB // 1024)  # every page touched, whether or not bytearray zero-fills
    blocks.append(block)
    pins.append(bytearray(2048))
peak = rss()
del blocks
if sys.argv[1] == "trimmed":
    assert release_free_heap()
print((peak - before) // MIB, (rss() - before) // MIB)
"""


ALLOCATOR_VARS = {"GLIBC_TUNABLES", "LD_PRELOAD", "PYTHONMALLOC"}
"""What would change the allocator the child measures (its own glibc malloc, as a trainer has)."""


def held_mib(setting: str) -> tuple[int, int]:
    child = [sys.executable, "-c", FRAGMENTS, setting]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k not in ALLOCATOR_VARS}
    done = subprocess.run(child, capture_output=True, text=True, cwd=ROOT, check=True, timeout=60, env=env)
    peak, after = done.stdout.split()
    return int(peak), int(after)


@pytest.mark.skipif(not cpu_memory.on_glibc(), reason="the settings are glibc's")
def test_freed_large_blocks_go_back_to_the_host_only_when_mapped_or_trimmed():
    held = {setting: held_mib(setting) for setting in ("default", "mapped", "trimmed")}
    assert all(peak >= 240 for peak, _ in held.values()), held  # each held the 256 MiB while it lived
    assert held["default"][1] >= 200, "glibc's default kept nothing: the anchor these settings beat is gone"
    assert held["mapped"][1] <= 32 and held["trimmed"][1] <= 32, held


def test_another_c_library_is_left_alone(monkeypatch):
    monkeypatch.setattr(cpu_memory.platform, "libc_ver", lambda: ("", ""))
    assert cpu_memory.map_large_blocks(True) is False
    assert cpu_memory.release_free_heap() is False
