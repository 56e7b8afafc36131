"""The CPU patches of TRL: the variable-length attention packed batches use without a hub (each segment
attends only to itself, causally, as flash-attn's varlen kernel does), and the fused LM head scoring only
labelled positions (the same figures and gradients from fewer rows)."""

from __future__ import annotations

import pytest
import torch

from actors.trl_cpu import compact_fused_head, sdpa_varlen, use_packed_attention


def reference(q, k, v, lengths_q, lengths_k):
    """Each segment on its own, with an explicit bottom-right causal mask and GQA expanded by hand."""
    out, qs, ks = [], 0, 0
    for lq, lk in zip(lengths_q, lengths_k, strict=True):
        qi, ki, vi = q[qs : qs + lq], k[ks : ks + lk], v[ks : ks + lk]
        ki = ki.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        vi = vi.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        scores = torch.einsum("qhd,khd->hqk", qi, ki) / qi.shape[-1] ** 0.5
        allowed = torch.arange(lk)[None, :] <= torch.arange(lq)[:, None] + (lk - lq)
        scores = scores.masked_fill(~allowed, float("-inf"))
        out.append(torch.einsum("hqk,khd->qhd", scores.softmax(-1), vi))
        qs, ks = qs + lq, ks + lk
    return torch.cat(out)


@pytest.mark.parametrize(
    ("lengths_q", "lengths_k"),
    [([5, 3, 8], [5, 3, 8]), ([2, 4], [6, 4]), ([1], [1])],
    ids=["square", "queries-behind-keys", "one-token"],
)
def test_each_segment_attends_causally_to_itself_only(lengths_q, lengths_k):
    torch.manual_seed(0)
    heads, kv_heads, dim = 4, 2, 8
    q = torch.randn(sum(lengths_q), heads, dim)
    k = torch.randn(sum(lengths_k), kv_heads, dim)
    v = torch.randn(sum(lengths_k), kv_heads, dim)
    cu_q = torch.tensor([0, *torch.tensor(lengths_q).cumsum(0).tolist()])
    cu_k = torch.tensor([0, *torch.tensor(lengths_k).cumsum(0).tolist()])
    got = sdpa_varlen(q, k, v, cu_q, cu_k, max(lengths_q), max(lengths_k))
    torch.testing.assert_close(got, reference(q, k, v, lengths_q, lengths_k), atol=1e-5, rtol=1e-5)


def test_segments_do_not_see_each_other():
    q = k = v = torch.randn(6, 2, 4)
    cu = torch.tensor([0, 3, 6])
    first = sdpa_varlen(q, k, v, cu, cu, 3, 3)[:3]
    v2 = v.clone()
    v2[3:] = 100.0  # the second segment's values change; the first segment's output must not
    torch.testing.assert_close(sdpa_varlen(q, k, v2, cu, cu, 3, 3)[:3], first)


def test_square_segments_run_on_the_fused_kernel_with_its_gradients():
    """SDPA takes its fused (flash) kernel only for 4-D inputs; a 3-D call falls back to the math kernel,
    which keeps every layer's attention weights for the backward (``benchmarks/packed_step.py``).
    Restricted to the fused kernel, a square causal segment must still run, forward and backward."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    q = torch.randn(12, 4, 8, requires_grad=True)
    k = torch.randn(12, 2, 8, requires_grad=True)
    v = torch.randn(12, 2, 8, requires_grad=True)
    cu = torch.tensor([0, 5, 12])
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        got = sdpa_varlen(q, k, v, cu, cu, 7, 7)
        got.sum().backward()
    torch.testing.assert_close(got, reference(q, k, v, [5, 7], [5, 7]), atol=1e-5, rtol=1e-5)
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in (q, k, v))


def test_an_unknown_attention_names_the_choices():
    with pytest.raises(ValueError, match="attention='flash3': use sdpa"):
        use_packed_attention("flash3")


def test_the_fused_head_scores_only_labelled_positions_with_the_same_results(monkeypatch):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from trl.kernels import chunked_logprob
    from trl.trainer import utils

    # TRL's own choice, even if this process patched it already; whatever was there comes back afterwards
    monkeypatch.setattr(utils, "_use_triton", chunked_logprob._use_triton)
    scored_rows = []
    chunked = utils._ChunkedLogProbFunction

    class Spy:
        @staticmethod
        def apply(hidden, *rest):
            scored_rows.append(hidden.shape[0])
            return chunked.apply(hidden, *rest)

    monkeypatch.setattr(utils, "_ChunkedLogProbFunction", Spy)
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, tie_word_embeddings=True,
    )  # fmt: skip
    model = Qwen2ForCausalLM(config)
    utils.add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    ids = torch.randint(0, 97, (1, 24))
    labels = ids.clone()
    labels[:, :16] = -100  # a prompt of 16 tokens, then 8 labelled ones

    def score():
        model.zero_grad()
        out = model(input_ids=ids, labels=labels, fused_lm_head=True)
        out.loss.backward()
        return out, [p.grad.clone() for p in model.parameters()]

    every, every_grads = score()
    compact_fused_head()
    compact_fused_head()  # idempotent
    only_labelled, only_labelled_grads = score()
    assert scored_rows == [23, 8]  # next-token positions: all of them, then the labelled ones
    for name in ("loss", "log_probs", "entropy", "is_top1"):
        torch.testing.assert_close(getattr(only_labelled, name), getattr(every, name), msg=name)
    assert only_labelled.log_probs[:, :15].abs().sum() == 0  # the prompt's positions are zero, as before
    for got, expected in zip(only_labelled_grads, every_grads, strict=True):
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-5)
