"""Confine the solution's process so it cannot read the judge's files (the hidden tests, their data).

Landlock (Linux 5.13+) lets an unprivileged process give up file-system access for itself and its
children, for good. The solution's process keeps read access to the whole file system except the judge's
folder, and write access only to its own tree and temporary folders; it loses TCP and, where the
kernel supports it, signals to and abstract sockets of processes outside its domain. Landlock grants by
folder and cannot except a sub-folder, so ``confine`` grants every sibling along the path to the judge's
folder instead of the root. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct

_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
_PR_SET_NO_NEW_PRIVS = 38
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read file, read dir
_ABI_FS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_WRITABLE_TOPS = ("/tmp", "/dev", "/var/tmp")


def abi_version() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is missing or disabled."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def grants(hidden: str, writable: tuple[str, ...]) -> list[tuple[str, bool]]:
    """``(path, writable)`` hierarchies that cover the file system except ``hidden``: every sibling of
    each folder on the way down to it, plus ``writable`` (inside ``hidden`` or not). Pure: reads only
    folder listings."""
    hidden = os.path.realpath(hidden)
    secret = _identity(hidden)
    out: list[tuple[str, bool]] = []
    parts = hidden.strip("/").split("/")
    parent = "/"
    for part in parts:
        try:
            names = sorted(os.listdir(parent))
        except OSError:
            names = []
        for name in names:
            path = os.path.join(parent, name)
            if name == part or _identity(path) == secret:  # the folder itself, or a bind of it elsewhere
                continue
            out.append((path, any(path == top or path.startswith(top + "/") for top in _WRITABLE_TOPS)))
        parent = os.path.join(parent, part)
    out.extend((os.path.realpath(w), True) for w in writable)
    return out


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def confine(hidden: str, writable: tuple[str, ...]) -> int:
    """Apply the rules to this process (and its future children); return the ABI version used, 0 when
    the kernel has no Landlock (nothing applied). Raises ``OSError`` when Landlock exists but fails."""
    version = abi_version()
    if version == 0:
        return 0
    create, add_rule, restrict = _SYSCALLS[platform.machine()]
    libc = ctypes.CDLL(None, use_errno=True)
    handled_fs = _ABI_FS.get(version, (1 << 16) - 1)
    attr = struct.pack("=Q", handled_fs)
    if version >= 4:
        attr += struct.pack("=Q", 0b11)  # bind and connect TCP: no rule grants them
    if version >= 6:
        attr += struct.pack("=Q", 0b11)  # abstract unix sockets and signals outside the domain
    buffer = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(create, buffer, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path, write in grants(hidden, writable):
            _add(libc, add_rule, ruleset, path, handled_fs if write else _READ)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(restrict, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return version


def _add(libc, add_rule: int, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # gone or unreadable: nothing to grant
    try:
        if not os.path.isdir(path):
            access &= (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # file rights only
        rule = ctypes.create_string_buffer(struct.pack("=Qi", access, fd), 12)
        if (
            libc.syscall(
                add_rule, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)
            )
            != 0
        ):
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)
