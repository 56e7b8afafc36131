"""Where a run's checkpoints and reports go: a local folder or a storage URI (a bucket), any node writing.

On one machine ``out_dir`` is a folder. On a cluster no two nodes share a disk, so a run names a storage URI
(``s3://bucket/runs/x``, ``gs://…``, ``file:///mnt/shared/x``, or any fsspec protocol such as
``memory://`` in tests) and whichever node holds a checkpoint or a report copies it there. pyarrow's file
systems handle the common clouds natively; other protocols go through fsspec.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs


@dataclass(frozen=True, slots=True)
class Storage:
    """A resolved storage location: the file system and the root path inside it."""

    fs: pafs.FileSystem
    root: str
    uri: str

    def path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *(p.strip("/") for p in parts if p)])


def is_uri(location: str) -> bool:
    return "://" in location


def open_storage(location: str | Path) -> Storage:
    """A local path or a URI as a Storage; raises ValueError naming the location and the fix."""
    text = str(location)
    if not text:
        raise ValueError("storage location is empty: give a folder or a URI such as s3://bucket/runs/name")
    if not is_uri(text):
        return Storage(pafs.LocalFileSystem(), str(Path(text).resolve()), text)
    try:
        fs, root = pafs.FileSystem.from_uri(text)
    except (pa.ArrowInvalid, ValueError, OSError) as native_error:
        try:
            import fsspec

            fsspec_fs, root = fsspec.core.url_to_fs(text)
        except (ImportError, ValueError) as exc:
            raise ValueError(
                f"storage {text!r}: no file system for it ({native_error}; {exc}): use a local folder, "
                "file://, s3://, gs://, hdfs://, or install the fsspec package for its protocol"
            ) from exc
        fs = pafs.PyFileSystem(pafs.FSSpecHandler(fsspec_fs))
    return Storage(fs, root, text)


def upload(local: str | Path, storage: Storage, *dest: str) -> str:
    """Copy a local file or folder (recursively) to ``storage/dest…``; return the destination path."""
    source = Path(local)
    if not source.exists():
        raise FileNotFoundError(f"nothing to upload at {source}")
    target = storage.path(*dest)
    if source.is_dir():
        storage.fs.create_dir(target, recursive=True)
        pafs.copy_files(str(source.resolve()), target, destination_filesystem=storage.fs)
    else:
        parent = target.rsplit("/", 1)[0]
        if parent:
            storage.fs.create_dir(parent, recursive=True)
        pafs.copy_files(str(source.resolve()), target, destination_filesystem=storage.fs)
    return target


def download(storage: Storage, source: str, local: str | Path) -> Path:
    """Copy ``storage/source`` (a file or folder) to a local path; return it."""
    target = Path(local)
    path = storage.path(source)
    info = storage.fs.get_file_info(path)
    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"{storage.uri}: nothing at {source!r}")
    if info.type == pafs.FileType.Directory:
        target.mkdir(parents=True, exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
    pafs.copy_files(path, str(target.resolve()), source_filesystem=storage.fs)
    return target


def listing(storage: Storage, prefix: str = "") -> list[str]:
    """Every file under ``storage/prefix``, as paths relative to the storage root."""
    base = storage.path(prefix)
    info = storage.fs.get_file_info(base)
    if info.type == pafs.FileType.NotFound:
        return []
    selector = pafs.FileSelector(base, recursive=True)
    root = storage.root.rstrip("/") + "/"
    return sorted(
        i.path.removeprefix(root) for i in storage.fs.get_file_info(selector) if i.type == pafs.FileType.File
    )
