"""The local sandbox's seccomp filter: the few system calls through which a sandboxed process makes the kernel
hold memory for it that no per-process figure shows and that no harness needs, refused with ``EPERM``.

- ``vmsplice``: hands pages to a pipe, which keeps them (a whole transparent huge page for 4 KiB handed
  over) after the process unmaps them: a red team held 406 MiB this way with 12 MiB resident;
- ``msgget``, ``semget``, ``shmget``: System V message queues, semaphore sets and shared memory live in
  the ipc namespace, beyond any process (407 MiB held in queues, 507 MiB in semaphore sets);
- ``add_key``, ``request_key``, ``keyctl``: kernel keys are charged to a user, not a process or a cgroup
  (Docker's default profile refuses them too).

Calls of another ABI (32-bit x86, x32) are refused whole: their numbers differ, and a filter that lists
only the native ones would let them through. The program is classic BPF, built here from the kernel's
constants (``linux/filter.h``, ``linux/seccomp.h``, ``linux/audit.h``), for bubblewrap's ``--seccomp``.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct

DENIED = ("vmsplice", "msgget", "semget", "shmget", "add_key", "request_key", "keyctl")
SYSCALLS = {
    "x86_64": {
        "vmsplice": 278, "msgget": 68, "semget": 64, "shmget": 29,
        "add_key": 248, "request_key": 249, "keyctl": 250,
    },
    "aarch64": {
        "vmsplice": 75, "msgget": 186, "semget": 190, "shmget": 194,
        "add_key": 217, "request_key": 218, "keyctl": 219,
    },
}  # fmt: skip
"""The native numbers of ``DENIED`` (``asm/unistd_64.h``; ``asm-generic/unistd.h`` for aarch64)."""
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_SYSCALL_BIT = 0x40000000

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_NR_OFFSET, _ARCH_OFFSET = 0, 4  # struct seccomp_data


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


@functools.cache
def filter_program(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (``platform.machine()``): a ``struct sock_filter`` array, built once (every
    sandbox run passes it). Raises ``ValueError`` for a machine without a table here."""
    machine = machine or platform.machine()
    if machine not in SYSCALLS:
        raise ValueError(f"no seccomp table for {machine!r}: known are {', '.join(SYSCALLS)}")
    numbers = [SYSCALLS[machine][name] for name in DENIED]
    checks = len(numbers) + (1 if machine == "x86_64" else 0)
    deny = _RET_ERRNO | errno.EPERM
    # Layout: [arch load, arch check, nr load, (x32 check), nr checks..., allow, deny]
    program = [_insn(_LD_W_ABS, _ARCH_OFFSET), _insn(_JEQ_K, AUDIT_ARCH[machine], 0, checks + 2)]
    program.append(_insn(_LD_W_ABS, _NR_OFFSET))
    remaining = checks
    if machine == "x86_64":
        remaining -= 1
        program.append(_insn(_JGE_K, X32_SYSCALL_BIT, remaining + 1, 0))
    for number in numbers:
        remaining -= 1
        program.append(_insn(_JEQ_K, number, remaining + 1, 0))
    program += [_insn(_RET_K, _RET_ALLOW), _insn(_RET_K, deny)]
    return b"".join(program)
