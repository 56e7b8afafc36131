"""Adapters packed on a trainer's node and unpacked on the server's: the bytes, not a path, travel."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from actors.errors import AdapterInvalidError
from actors.serving.transfer import PackedAdapter, pack_adapter, unpack_adapter


def adapter(folder: Path) -> Path:
    folder.mkdir()
    (folder / "adapter_config.json").write_text('{"r": 8}')
    (folder / "adapter_model.safetensors").write_bytes(bytes(range(256)) * 64)
    return folder


def test_a_packed_adapter_unpacks_to_the_same_files(tmp_path: Path) -> None:
    source = adapter(tmp_path / "checkpoint-2")
    packed = pack_adapter(source)
    assert packed.files == 2 and packed.size_bytes > 256 * 64
    out = unpack_adapter(packed, tmp_path / "elsewhere" / "pi-v2")
    assert sorted(p.name for p in out.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    for name in ("adapter_config.json", "adapter_model.safetensors"):
        assert (out / name).read_bytes() == (source / name).read_bytes()


def test_packing_refuses_what_is_not_an_adapter_folder(tmp_path: Path) -> None:
    with pytest.raises(AdapterInvalidError, match="not a folder"):
        pack_adapter(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AdapterInvalidError, match="no files"):
        pack_adapter(tmp_path / "empty")
    with pytest.raises(AdapterInvalidError, match="save only the adapter"):
        pack_adapter(adapter(tmp_path / "big"), max_bytes=100)


def _archive(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> PackedAdapter:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return PackedAdapter(data=buffer.getvalue(), source="test", files=len(members))


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


@pytest.mark.parametrize(
    "member",
    [
        _file("../escape.txt"),
        _file("/etc/evil"),
        _file("sub/adapter.bin"),
        _link("adapter_model.safetensors", "/etc/passwd"),
    ],
)
def test_unpacking_refuses_members_that_could_leave_the_destination(tmp_path: Path, member) -> None:
    with pytest.raises(AdapterInvalidError, match="not a plain top-level file"):
        unpack_adapter(_archive([_file("adapter_config.json"), member]), tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()


def test_unpacking_never_overwrites_a_live_folder(tmp_path: Path) -> None:
    live = adapter(tmp_path / "live")
    with pytest.raises(FileExistsError):
        unpack_adapter(pack_adapter(live), live)
