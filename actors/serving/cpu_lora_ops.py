"""Segment-wise LoRA prefill ops for vLLM's CPU backend, installed as a vLLM general plugin.

Why: vLLM's PyTorch-native LoRA ops (``vllm/lora/ops/torch_ops``, used by ``PunicaWrapperCPU``) handle a
prefill by gathering one weight matrix *per token* (``lora_weights[exploded_indices]``) before an einsum.
For agent prompts of 5-20K tokens that materialises gigabytes per layer and made one multi-LoRA
evaluation on CPU slower than serving every checkpoint merged (measured: minutes for 108 requests).
Prefill tokens arrive in runs that share one adapter, so one matmul per run computes the same thing.

Runs whose adapter index is -1 (requests for the base model) contribute nothing here; the stock op would
index the last adapter slot with -1. Decode (one token per sequence) keeps vLLM's op: its gather is small.

The plugin is registered under the ``vllm.general_plugins`` entry point (see pyproject.toml), so vLLM
loads it in every process it starts; it only patches when the CPU Punica wrapper is what vLLM uses, and
nothing in the installed package is edited. ``VLLM_PLUGINS`` can exclude it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def _segments(
    starts: torch.Tensor, lengths: torch.Tensor, indices: torch.Tensor, batches: int
) -> Iterator[tuple[slice, int]]:
    for start, length, index in zip(
        starts[:batches].tolist(), lengths[:batches].tolist(), indices[:batches].tolist(), strict=True
    ):
        if length > 0:
            yield slice(start, start + length), index


def _weights(stacked: torch.Tensor) -> torch.Tensor:
    return stacked.squeeze(1) if stacked.dim() == 4 else stacked


def sgmv_shrink(
    inputs,
    lora_a_weights,
    output_tensor,
    b_seq_start_loc,
    seq_len_tensor,
    lora_indices_tensor,
    batches,
    max_seq_length,
    token_nums,
    scaling,
):
    """``out[rows, :rank] = scaling * x[rows] @ A[lora].T`` for each run of rows sharing one adapter."""
    weights = _weights(lora_a_weights)
    rank = weights.shape[1]
    for rows, index in _segments(b_seq_start_loc, seq_len_tensor, lora_indices_tensor, batches):
        if index < 0:
            output_tensor[rows, :rank] = 0
            continue
        x = inputs[rows].to(output_tensor.dtype)
        output_tensor[rows, :rank] = scaling * (x @ weights[index].to(output_tensor.dtype).T)


def _expand(inputs, weights, output_tensor, segments, columns: slice, add_inputs: bool) -> None:
    """``out[rows, columns] (+)= x[rows] @ B[lora].T`` for each run of rows sharing one adapter."""
    for rows, index in segments:
        if index < 0:
            if not add_inputs:
                output_tensor[rows, columns] = 0
            continue
        out = inputs[rows].to(output_tensor.dtype) @ weights[index].to(output_tensor.dtype).T
        if add_inputs:
            output_tensor[rows, columns] += out
        else:
            output_tensor[rows, columns] = out


def sgmv_expand(
    inputs,
    lora_b_weights,
    output_tensor,
    b_seq_start_loc,
    seq_len_tensor,
    lora_indices_tensor,
    batches,
    max_seq_length,
    token_nums,
    add_inputs=False,
):
    """``out[rows] (+)= x[rows] @ B[lora].T``, clipped to the narrower of adapter and model padding."""
    weights = _weights(lora_b_weights)
    width = min(weights.shape[1], output_tensor.shape[1])
    segments = _segments(b_seq_start_loc, seq_len_tensor, lora_indices_tensor, batches)
    _expand(inputs, weights[:, :width], output_tensor, segments, slice(0, width), add_inputs)


def sgmv_expand_slice(
    inputs,
    lora_b_weights,
    output_tensor,
    b_seq_start_loc,
    seq_len_tensor,
    lora_indices_tensor,
    batches,
    max_seq_length,
    token_nums,
    slice_offset,
    slice_size,
    add_inputs=False,
):
    """``out[rows, offset:offset+size] (+)= x[rows] @ B[lora].T``."""
    segments = _segments(b_seq_start_loc, seq_len_tensor, lora_indices_tensor, batches)
    columns = slice(slice_offset, slice_offset + slice_size)
    _expand(inputs, _weights(lora_b_weights), output_tensor, segments, columns, add_inputs)


def register() -> None:
    """vLLM general-plugin hook: swap the CPU Punica wrapper's prefill ops. Safe to call repeatedly."""
    try:
        from vllm.lora.punica_wrapper import punica_cpu
    except ImportError:  # a vLLM without the CPU LoRA path: nothing to do
        return
    punica_cpu.sgmv_shrink = sgmv_shrink
    punica_cpu.sgmv_expand = sgmv_expand
    punica_cpu.sgmv_expand_slice = sgmv_expand_slice
