from __future__ import annotations

import os

from environments.integrity.snapshot import EntryKind, copy_tree, snapshot_of_files, take_snapshot


def test_the_walk_never_follows_links_or_opens_special_or_oversize_files(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    os.symlink(outside, root / "tests")
    os.mkfifo(root / "answer.txt")
    with open(root / "big", "wb") as handle:
        handle.truncate(4 << 30)
    snap = take_snapshot(root, max_file_bytes=1024)
    assert snap.entries["a.py"].kind is EntryKind.FILE and snap.contents["a.py"] == b"x = 1\n"
    assert snap.entries["tests"].kind is EntryKind.LINK and snap.entries["tests"].link_target == str(outside)
    assert "tests/secret" not in snap.entries
    assert snap.entries["answer.txt"].kind is EntryKind.SPECIAL
    assert snap.entries["big"].kind is EntryKind.OVERSIZE and "big" not in snap.contents


def test_a_copied_tree_snapshots_like_the_original(tmp_path):
    root = tmp_path / "ws"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("y = 2\n")
    os.symlink("/etc/passwd", root / "pkg" / "link")
    os.mkfifo(root / "fifo")
    copy = copy_tree(root, tmp_path / "copy")
    assert take_snapshot(copy).entries == take_snapshot(root).entries


def test_a_snapshot_of_files_matches_the_tree_they_make(tmp_path):
    files = {"a/b.txt": b"1", "c.py": b"2"}
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    assert snapshot_of_files(files).entries == take_snapshot(tmp_path).entries
