"""The variable-length attention packed batches use without a hub: each segment attends only to itself,
causally, as flash-attn's varlen kernel does."""

from __future__ import annotations

import pytest
import torch

from actors.trl_cpu import sdpa_varlen, use_packed_attention


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


def test_an_unknown_attention_names_the_choices():
    with pytest.raises(ValueError, match="attention='flash3': use sdpa"):
        use_packed_attention("flash3")
