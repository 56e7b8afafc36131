"""Adapters as bytes, so a trainer on one node can publish to a server on another without a shared disk.

A trainer packs the adapter folder ``save_pretrained`` wrote into one uncompressed tar (safetensors do not
compress) and hands it to the serving actor's ``publish_packed``; Ray carries a large argument through its
object store, node to node. The server unpacks it into its own store. Only the files a PEFT adapter
folder holds travel (regular files at the top level, bounded in size and count), and unpacking refuses
links, folders and names that would leave the destination, so a bad archive cannot write outside it.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

from actors.errors import AdapterInvalidError

MAX_ADAPTER_BYTES = 4 * 1024**3
"""Largest adapter that travels (a rank-64 LoRA of a 24B model's attention and MLP is about 1.5 GB)."""
MAX_FILES = 64


@dataclass(frozen=True, slots=True)
class PackedAdapter:
    """An adapter folder's files as one tar archive, with where it came from (for errors and logs)."""

    data: bytes
    source: str
    files: int

    @property
    def size_bytes(self) -> int:
        return len(self.data)


def pack_adapter(path: str | Path, max_bytes: int = MAX_ADAPTER_BYTES) -> PackedAdapter:
    """The adapter folder's top-level regular files as a tar; raises AdapterInvalidError naming the
    problem (not a folder, a link, too large)."""
    folder = Path(path)
    if not folder.is_dir():
        raise AdapterInvalidError(
            f"adapter path {folder} is not a folder: pass the folder save_pretrained wrote"
        )
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.is_symlink())
    if not files:
        raise AdapterInvalidError(f"adapter folder {folder} holds no files")
    if len(files) > MAX_FILES:
        raise AdapterInvalidError(f"adapter folder {folder} holds {len(files)} files (at most {MAX_FILES})")
    total = sum(p.stat().st_size for p in files)
    if total > max_bytes:
        raise AdapterInvalidError(
            f"adapter folder {folder} is {total / 1e9:.2f} GB, over the {max_bytes / 1e9:.2f} GB limit: "
            "save only the adapter (save_pretrained of the PEFT model), not the merged weights"
        )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for file in files:
            tar.add(file, arcname=file.name, recursive=False)
    return PackedAdapter(data=buffer.getvalue(), source=str(folder), files=len(files))


def unpack_adapter(packed: PackedAdapter, dest: str | Path, max_bytes: int = MAX_ADAPTER_BYTES) -> Path:
    """Write a packed adapter's files into ``dest`` (created; it must not exist yet) and return it.

    Refuses members that are not plain files at the top level (links, folders, ``..``, absolute names)
    and archives over ``max_bytes`` unpacked, with an AdapterInvalidError naming the member."""
    target = Path(dest)
    target.mkdir(parents=True, exist_ok=False)
    total = 0
    with tarfile.open(fileobj=io.BytesIO(packed.data), mode="r:") as tar:
        members = tar.getmembers()
        if len(members) > MAX_FILES:
            raise AdapterInvalidError(f"packed adapter from {packed.source} holds {len(members)} members")
        for member in members:
            name = member.name
            if not member.isfile() or "/" in name or name in ("", ".", "..") or name.startswith("."):
                raise AdapterInvalidError(
                    f"packed adapter from {packed.source}: member {name!r} is not a plain top-level file"
                )
            total += member.size
            if total > max_bytes:
                raise AdapterInvalidError(
                    f"packed adapter from {packed.source} unpacks past {max_bytes} bytes"
                )
            source = tar.extractfile(member)
            if source is None:
                raise AdapterInvalidError(f"packed adapter from {packed.source}: member {name!r} has no data")
            with source, open(target / name, "xb") as out:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
    return target
