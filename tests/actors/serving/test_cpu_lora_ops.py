"""The segment-wise CPU LoRA prefill ops compute what vLLM's per-token ops compute."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
vllm_ops = pytest.importorskip("vllm.lora.ops.torch_ops.lora_ops")

from actors.serving import cpu_lora_ops  # noqa: E402

SEGMENTS = [(0, 5, 2), (5, 1, 0), (6, 9, 1), (15, 3, 2)]  # (start, length, adapter slot)


def _meta(segments):
    starts = torch.tensor([s for s, _, _ in segments])
    lengths = torch.tensor([n for _, n, _ in segments])
    indices = torch.tensor([i for _, _, i in segments])
    return starts, lengths, indices, len(segments), int(lengths.max()), int(lengths.sum())


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(0)


def test_shrink_matches_vllm(gen):
    meta = _meta(SEGMENTS)
    x = torch.randn(meta[-1], 64, generator=gen)
    a = torch.randn(3, 1, 8, 64, generator=gen)
    ours, theirs = torch.zeros(meta[-1], 8), torch.zeros(meta[-1], 8)
    cpu_lora_ops.sgmv_shrink(x, a, ours, *meta, 0.5)
    vllm_ops.sgmv_shrink(x, a, theirs, *meta, 0.5)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("add_inputs", [True, False])
def test_expand_and_expand_slice_match_vllm(gen, add_inputs: bool):
    meta = _meta(SEGMENTS)
    x = torch.randn(meta[-1], 8, generator=gen)
    b = torch.randn(3, 1, 48, 8, generator=gen)
    start = torch.randn(meta[-1], 48, generator=gen)
    ours, theirs = start.clone(), start.clone()
    cpu_lora_ops.sgmv_expand(x, b, ours, *meta, add_inputs)
    vllm_ops.sgmv_expand(x, b, theirs, *meta, add_inputs)
    torch.testing.assert_close(ours, theirs)
    wide = torch.randn(meta[-1], 100, generator=gen)
    ours, theirs = wide.clone(), wide.clone()
    cpu_lora_ops.sgmv_expand_slice(x, b, ours, *meta, 20, 48, add_inputs)
    vllm_ops.sgmv_expand_slice(x, b, theirs, *meta, 20, 48, add_inputs)
    torch.testing.assert_close(ours, theirs)


def test_base_model_rows_get_no_adapter_contribution(gen):
    meta = _meta([(0, 4, -1), (4, 4, 1)])
    x = torch.randn(8, 16, generator=gen)
    b = torch.randn(2, 1, 32, 4, generator=gen)
    out = torch.ones(8, 32)
    cpu_lora_ops.sgmv_expand(torch.randn(8, 4, generator=gen), b, out, *meta, True)
    assert torch.equal(out[:4], torch.ones(4, 32))
    assert not torch.equal(out[4:], torch.ones(4, 32))
    shrunk = torch.full((8, 4), 7.0)
    cpu_lora_ops.sgmv_shrink(x, torch.randn(2, 1, 4, 16, generator=gen), shrunk, *meta, 1.0)
    assert torch.equal(shrunk[:4], torch.zeros(4, 4))


def test_the_plugin_is_registered_with_vllm_and_patches_the_cpu_wrapper():
    from importlib.metadata import entry_points

    from vllm.lora.punica_wrapper import punica_cpu

    names = {ep.value for ep in entry_points(group="vllm.general_plugins")}
    assert "actors.serving.cpu_lora_ops:register" in names
    cpu_lora_ops.register()
    assert punica_cpu.sgmv_shrink is cpu_lora_ops.sgmv_shrink
