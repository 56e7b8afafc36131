"""The serving actor's adapter store, without a vLLM process: a new server starts with an empty one."""

from __future__ import annotations

from actors.serving.config import ServingConfig
from actors.serving.server import VLLMServer


def test_a_server_in_an_earlier_runs_folder_starts_with_an_empty_store(tmp_path):
    """A learning-check seed rerun in the folder of one that died: publishing ``pi-v1`` again failed with
    'Directory not empty', because the dead run's ``pi-v1`` was still in the store."""
    stale = tmp_path / "adapters" / "pi-v1"
    stale.mkdir(parents=True)
    (stale / "adapter_model.safetensors").write_bytes(b"an earlier run's weights")
    (tmp_path / "adapters" / ".staging-pi-v2-0123abcd").mkdir()
    (tmp_path / "vllm.log").write_text("kept")
    server = VLLMServer(ServingConfig(model="m"), str(tmp_path))
    assert server.store == tmp_path / "adapters"
    assert list(server.store.iterdir()) == []
    assert (tmp_path / "vllm.log").read_text() == "kept"  # only the store is the server's to clear
