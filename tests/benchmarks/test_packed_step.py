"""The packed-step benchmark's counting (no model): with nothing shared, packing saves nothing; with the
smoke run's shape, the shared system prompt is forwarded once."""

from __future__ import annotations

from benchmarks.packed_step import forwarded_tokens, micro_batches, session_rows


def test_rows_that_share_nothing_forward_the_same_tokens_packed_or_not():
    rows = session_rows(prefix=0, sessions=1)[:1]  # one row: nothing to share with
    assert forwarded_tokens(micro_batches(rows, packed=True)) == forwarded_tokens(micro_batches(rows, False))


def test_a_shared_prefix_and_earlier_turns_are_forwarded_once_packed():
    rows = session_rows(prefix=1400, sessions=8)
    unpacked = forwarded_tokens(micro_batches(rows, packed=False))
    assert unpacked == sum(len(r["input_ids"]) for r in rows)
    packed = forwarded_tokens(micro_batches(rows, packed=True))
    assert unpacked - packed >= (len(rows) - 1) * 1400  # the system prompt forwarded once, not 16 times
    # then per session about its instruction, both turns and the tool result (TRL lays out a few more)
    assert 1400 + 8 * (150 + 40 + 60 + 40) <= packed < 1400 + 8 * (150 + 40 + 60 + 40 + 10)
