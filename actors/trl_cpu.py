"""What TRL's asynchronous GRPO trainer needs to run on a CPU, applied at run time (installed packages
are never edited). ``patch_trl_for_cpu()`` is idempotent and changes nothing on a CUDA machine.

Why each patch:
- ``get_peak_flops_per_device`` (for MFU metrics) calls ``torch.cuda.get_device_name`` unconditionally,
  which raises without CUDA; on CPU there is no peak to compare with, so it returns ``None`` (TRL then
  skips the MFU metrics, as it does for unknown GPUs).
- The trainer packs samples with a tree attention whose kernel (flash-attn 3) is fetched from a model hub
  by the ``kernels`` package: no hub and no CUDA here. ``sdpa_varlen`` is the same variable-length causal
  attention written with ``torch.nn.functional.scaled_dot_product_attention``, one segment at a time, in
  4-D: SDPA serves 3-D inputs only with its math kernel, which keeps every layer's attention weights for
  the backward (``benchmarks/packed_step.py``, tiny model: the unpacked step 26.3 s against 11.9, the
  packed one 4.9 against 4.0).
- TRL's fused LM head (``add_fused_lm_head``, used by the SFT and the GRPO trainers) scores only the
  positions that carry a label on Triton devices; elsewhere it scores every position, because on Neuron a
  varying count would recompile the tiles. CPU eager has no tiles to recompile, and scoring the prompt (a
  harness's system prompt is ~85% of an SFT row) took 55% of the tiny agent's SFT step. ``compact_fused_head``
  scores the labelled positions alone there too: the same log-probs, entropies and gradients (the masked
  positions are zero either way); ``benchmarks/fused_head.py``: the SFT step 2.2x, the packed GRPO step
  1.3x faster.

On a GPU the same choice is the trainer's ``attention`` setting (``use_packed_attention``): ``sdpa`` (the
default) runs ``sdpa_varlen``, whose segments of equal query and key length take SDPA's fused causal
kernels, and needs nothing from a hub; ``kernels`` keeps TRL's hub-fetched flash-attn kernel (the ``kernels``
package is in the ``gpu`` extra; the nodes need the Hub).
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
import torch.nn.functional as F  # noqa: N812

from actors.trainer_settings import setting_problems

_PATCHED = False


def sdpa_varlen(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    softmax_scale: float | None = None,
    causal: bool = True,
    window_size: tuple[int, int] = (-1, -1),
    softcap: float | None = None,
) -> torch.Tensor:
    """flash-attn's ``flash_attn_varlen_func`` contract: ``q`` is (total_q, heads, dim), ``k``/``v`` are
    (total_k, kv_heads, dim); segment ``i`` is rows ``cu[i]:cu[i+1]``. Causal masking is aligned to the
    bottom right (query ``j`` of a segment sees keys up to ``j + len_k - len_q``), as flash-attn does."""
    if softcap:
        raise NotImplementedError("sdpa_varlen: softcap is not supported on CPU")
    if window_size != (-1, -1):
        raise NotImplementedError("sdpa_varlen: sliding-window attention is not supported on CPU")
    heads, kv_heads = q.shape[1], k.shape[1]
    out = torch.empty_like(q)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for i in range(len(cq) - 1):
        qs, qe, ks, ke = cq[i], cq[i + 1], ck[i], ck[i + 1]
        if qe == qs:
            continue
        qi = q[qs:qe].transpose(0, 1)  # (heads, len_q, dim)
        ki = k[ks:ke].transpose(0, 1)
        vi = v[ks:ke].transpose(0, 1)
        if kv_heads != heads:
            ki = ki.repeat_interleave(heads // kv_heads, dim=0)
            vi = vi.repeat_interleave(heads // kv_heads, dim=0)
        mask, square = None, qe - qs == ke - ks
        if causal and not square:
            len_q, len_k = qe - qs, ke - ks
            rows = torch.arange(len_q, device=q.device).unsqueeze(1)
            cols = torch.arange(len_k, device=q.device).unsqueeze(0)
            mask = cols <= rows + (len_k - len_q)
        out[qs:qe] = F.scaled_dot_product_attention(  # square and causal: the fused kernels' own masking
            qi[None], ki[None], vi[None], attn_mask=mask, is_causal=causal and square, scale=softmax_scale
        )[0].transpose(0, 1)
    return out


def compact_fused_head() -> None:
    """TRL's fused LM head scores only labelled positions on CPU as well (module docstring). Idempotent."""
    from trl.trainer import utils

    scores_all = utils._use_triton
    if getattr(scores_all, "compacts_cpu", False):
        return

    def compacts(device: torch.device) -> bool:
        return device.type == "cpu" or scores_all(device)

    compacts.compacts_cpu = True  # type: ignore[attr-defined]
    utils._use_triton = compacts


def patch_trl_for_cpu() -> None:
    """Apply the CPU patches (see the module docstring) when CUDA is not available."""
    global _PATCHED
    if _PATCHED or torch.cuda.is_available():
        return
    from trl.experimental.async_grpo import async_grpo_trainer, packing

    compact_fused_head()

    async_grpo_trainer.get_peak_flops_per_device = lambda accelerator, dtype: None
    kernel = SimpleNamespace(flash_attn_varlen_func=sdpa_varlen)
    packing._flash_attn = lambda: kernel
    _PATCHED = True


def use_packed_attention(mode: str) -> None:
    """Which variable-length attention TRL's packed batches use (module docstring); on CPU always sdpa."""
    if problems := setting_problems(mode, "auto"):
        raise ValueError(problems[0])
    if not torch.cuda.is_available():
        patch_trl_for_cpu()
        return
    if mode == "sdpa":
        from trl.experimental.async_grpo import packing

        kernel = SimpleNamespace(flash_attn_varlen_func=sdpa_varlen)
        packing._flash_attn = lambda: kernel
