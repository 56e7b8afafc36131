"""A workspace as data: every entry's type, size, content hash and link target, read without following links.

The effect audit compares two snapshots (the start state and what the agent left); the verifier takes the
agent's solution surface from the same walk. The walk never follows a symbolic link (``lstat`` only, links
are recorded with their target text), never opens a file that is not regular (a FIFO would block, a device
could be endless), and never reads a file larger than ``max_file_bytes`` (a sparse 4 GB file costs one
``lstat``). What it refuses it still records, as an entry of kind ``special`` or ``oversize``, so the audit
and the verifier can name it. The whole walk is bounded too: at most ``max_entries`` entries, folders at
most ``max_depth`` deep, and ``max_total_bytes`` read in all (later files are recorded ``oversize``, unread);
a walk that hit one of these is ``truncated``, which the audit flags.

Limits of the walk: it reads the tree as it is at the moment of the walk; the caller must make sure nothing
writes to it meanwhile (the rollout takes it after the sandbox's processes are gone).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

MAX_FILE_BYTES = 8 * 1024 * 1024
"""A larger file is recorded as ``oversize`` and never read."""
MAX_ENTRIES = 20_000
"""A tree with more entries is cut off here (recorded in ``Snapshot.truncated``)."""
MAX_DEPTH = 64
"""Folders deeper than this are recorded but not entered (``truncated``)."""
MAX_TOTAL_BYTES = 128 * 1024 * 1024
"""Bytes read per walk; files past it are recorded ``oversize`` without being read (``truncated``)."""
SKIPPED_DIRS = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Caches a test run leaves behind: recorded as present, never read (the verifier never takes them)."""


class EntryKind(StrEnum):
    FILE = "file"
    DIR = "dir"
    LINK = "link"
    SPECIAL = "special"
    """A FIFO, socket or device node."""
    OVERSIZE = "oversize"
    """A regular file above the size limit: hashed by size only, never read."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One path of a workspace, as ``lstat`` saw it."""

    kind: EntryKind
    size: int = 0
    sha256: str = ""
    """Content hash of a regular file; empty for other kinds."""
    link_target: str = ""
    """What a symbolic link points at, as written (never resolved)."""
    executable: bool = False
    hard_links: int = 1


@dataclass(frozen=True, slots=True)
class Snapshot:
    """``{posix relative path: Entry}`` of a tree, plus the contents of its regular files."""

    entries: dict[str, Entry]
    contents: dict[str, bytes] = field(repr=False)
    truncated: bool = False

    def files(self) -> dict[str, bytes]:
        """Regular files within the limits, as ``{path: bytes}``."""
        return dict(self.contents)


def _entry_of(path: Path, st: os.stat_result, max_file_bytes: int) -> tuple[Entry, bytes | None]:
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        return Entry(EntryKind.LINK, link_target=os.readlink(path)), None
    if stat.S_ISDIR(mode):
        return Entry(EntryKind.DIR), None
    if not stat.S_ISREG(mode):
        return Entry(EntryKind.SPECIAL, size=st.st_size), None
    if st.st_size > max_file_bytes:
        return Entry(EntryKind.OVERSIZE, size=st.st_size, hard_links=st.st_nlink), None
    data = _read_regular(path, max_file_bytes)
    if data is None:  # replaced by something else between lstat and open
        return Entry(EntryKind.SPECIAL, size=st.st_size), None
    executable = bool(mode & stat.S_IXUSR)
    digest = hashlib.sha256(data).hexdigest()
    return Entry(EntryKind.FILE, len(data), digest, executable=executable, hard_links=st.st_nlink), data


def _read_regular(path: Path, max_file_bytes: int) -> bytes | None:
    """The file's bytes, opened without following a link and without blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, total = [], 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > max_file_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def take_snapshot(
    root: Path,
    *,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_entries: int = MAX_ENTRIES,
    max_depth: int = MAX_DEPTH,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> Snapshot:
    """Walk ``root`` without following links; see the module docstring for what is and is not read."""
    root = Path(root)
    entries: dict[str, Entry] = {}
    contents: dict[str, bytes] = {}
    truncated = False
    left = max_total_bytes
    todo = [(root, 0)]
    while todo:
        folder, depth = todo.pop()
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if len(entries) >= max_entries:
                truncated = True
                break
            path = folder / name
            rel = path.relative_to(root).as_posix()
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode) and name in SKIPPED_DIRS:
                entries[rel] = Entry(EntryKind.DIR)
                continue
            if stat.S_ISREG(st.st_mode) and st.st_size <= max_file_bytes and st.st_size > left:
                entries[rel] = Entry(EntryKind.OVERSIZE, size=st.st_size, hard_links=st.st_nlink)
                truncated = True
                continue
            entry, data = _entry_of(path, st, min(max_file_bytes, left))
            entries[rel] = entry
            if data is not None:
                contents[rel] = data
                left -= len(data)
            if entry.kind is EntryKind.DIR:
                if depth + 1 >= max_depth:
                    truncated = True
                else:
                    todo.append((path, depth + 1))
    return Snapshot(dict(sorted(entries.items())), contents, truncated)


def snapshot_of_files(files: dict[str, bytes]) -> Snapshot:
    """The snapshot a tree written from ``files`` (e.g. a task's workspace) would give."""
    entries: dict[str, Entry] = {}
    for rel, data in files.items():
        parts = rel.split("/")
        for i in range(1, len(parts)):
            entries["/".join(parts[:i])] = Entry(EntryKind.DIR)
        entries[rel] = Entry(EntryKind.FILE, len(data), hashlib.sha256(data).hexdigest())
    return Snapshot(dict(sorted(entries.items())), dict(files))


def copy_tree(src: Path, dest: Path, *, max_file_bytes: int | None = MAX_FILE_BYTES) -> Path:
    """Copy ``src`` into ``dest`` (created if missing) as ``take_snapshot`` would see it, never reading
    what it must not: links are copied as links (never followed), special files become empty FIFOs (so
    the audit still sees a ``special`` entry), oversize files become sparse files of the same size (their
    bytes are never read; ``None``: no limit), regular files are copied with their executable bit."""
    src, dest = Path(src), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    todo = [Path(".")]
    while todo:
        rel = todo.pop()
        try:
            names = sorted(os.listdir(src / rel))
        except OSError:
            continue
        for name in names:
            source, target = src / rel / name, dest / rel / name
            try:
                st = os.lstat(source)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                target.mkdir(exist_ok=True)
                todo.append(rel / name)
            elif stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(source), target)
            elif not stat.S_ISREG(st.st_mode):
                os.mkfifo(target)
            elif max_file_bytes is not None and st.st_size > max_file_bytes:
                with open(target, "wb") as handle:
                    handle.truncate(st.st_size)
            else:
                try:
                    shutil.copyfile(source, target, follow_symlinks=False)
                except (OSError, shutil.SpecialFileError):  # replaced meanwhile: keep it visible
                    target.unlink(missing_ok=True)
                    os.mkfifo(target)
                    continue
                if st.st_mode & stat.S_IXUSR:
                    target.chmod(0o755)
    return dest
