"""Checkpoints and reports copied to a storage location: a folder, a file:// URI, an fsspec bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.storage import download, listing, open_storage, upload


def run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "pi" / "checkpoint-2"
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text('{"r": 8}')
    (folder / "adapter_model.safetensors").write_bytes(b"\x00" * 1000)
    (tmp_path / "report.md").write_text("# report\n")
    return folder


@pytest.mark.parametrize("kind", ["folder", "file-uri", "memory-bucket"])
def test_a_checkpoint_and_a_report_round_trip(tmp_path: Path, kind: str) -> None:
    checkpoint = run_folder(tmp_path / "node-a")
    location = {
        "folder": str(tmp_path / "store"),
        "file-uri": (tmp_path / "store").as_uri(),
        "memory-bucket": f"memory://bucket-{tmp_path.name}/runs/x",
    }[kind]
    storage = open_storage(location)
    upload(checkpoint, storage, "train", "pi", "checkpoint-2")
    upload(tmp_path / "node-a" / "report.md", storage, "eval", "report.md")
    assert listing(storage) == [
        "eval/report.md",
        "train/pi/checkpoint-2/adapter_config.json",
        "train/pi/checkpoint-2/adapter_model.safetensors",
    ]
    back = download(storage, "train/pi/checkpoint-2", tmp_path / "node-b" / "ckpt")
    assert (back / "adapter_model.safetensors").read_bytes() == b"\x00" * 1000
    assert download(storage, "eval/report.md", tmp_path / "node-b" / "r.md").read_text() == "# report\n"


def test_bad_locations_are_named_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="storage location is empty"):
        open_storage("")
    with pytest.raises(ValueError, match="no file system"):
        open_storage("nosuchproto://bucket/x")
    storage = open_storage(tmp_path / "store")
    with pytest.raises(FileNotFoundError, match="nothing at 'missing'"):
        download(storage, "missing", tmp_path / "out")
    with pytest.raises(FileNotFoundError, match="nothing to upload"):
        upload(tmp_path / "absent", storage, "x")
