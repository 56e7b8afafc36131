import pytest

from actors.grpo import RecordedTurn, rollout_rows, turns_from_record


def turn(prompt, completion, conversation="main"):
    return RecordedTurn(tuple(prompt), tuple(completion), tuple(-0.1 * t for t in completion), conversation)


def test_turns_that_extend_the_held_tokens_chain_into_one_row():
    rows = rollout_rows([turn([1, 2, 3], [4, 5]), turn([1, 2, 3, 4, 5, 6, 7], [8])])
    assert len(rows) == 1
    row = rows[0]
    assert row.input_ids == (1, 2, 3, 4, 5, 6, 7, 8)
    assert row.completion_mask == (0, 0, 0, 1, 1, 0, 0, 1)
    assert row.old_logprobs == pytest.approx((0, 0, 0, -0.4, -0.5, 0, 0, -0.8))


def test_a_prompt_that_rewrites_earlier_tokens_forks_a_new_row():
    # the template re-rendered the first reply differently (5 -> 9): the sampled tokens stay trained
    # in the row they were sampled in; the new turn starts a row of its own
    rows = rollout_rows([turn([1, 2, 3], [4, 5]), turn([1, 2, 3, 4, 9, 6], [7, 8])])
    assert [r.input_ids for r in rows] == [(1, 2, 3, 4, 5), (1, 2, 3, 4, 9, 6, 7, 8)]
    assert [r.trained_tokens for r in rows] == [2, 2]
    assert rows[1].completion_mask == (0, 0, 0, 0, 0, 0, 1, 1)


def test_every_trained_token_is_a_sampled_token_with_its_logprob():
    turns = [turn([1, 2], [3]), turn([1, 2, 3, 4], [5, 6]), turn([7], [8])]
    rows = rollout_rows(turns)
    trained = [
        (t, lp)
        for r in rows
        for t, m, lp in zip(r.input_ids, r.completion_mask, r.old_logprobs, strict=True)
        if m
    ]
    sampled = [(c, -0.1 * c) for t in turns for c in t.completion_ids]
    assert [t for t, _ in trained] == [t for t, _ in sampled]
    assert [lp for _, lp in trained] == pytest.approx([lp for _, lp in sampled])


def test_record_json_keeps_the_main_conversation_and_skips_failed_turns():
    def t(conv, prompt, completion, error=None):
        return {
            "conversation": conv,
            "prompt_ids": prompt,
            "completion_ids": completion,
            "logprobs": [-1.0] * len(completion),
            "error": error,
        }

    record = {
        "conversation_key": "main",
        "turns": [
            t("main", [1, 2], [3]),
            t("title", [9], [10, 11]),
            t("main", [1, 2, 3, 4], [], error="upstream_status"),
            t("main", [1, 2, 3, 4], [5]),
        ],
    }
    turns = turns_from_record(record)
    assert [x.completion_ids for x in turns] == [(3,), (5,)]
    assert rollout_rows(turns)[0].input_ids == (1, 2, 3, 4, 5)


def test_bad_records_name_the_problem():
    with pytest.raises(ValueError, match="turns"):
        turns_from_record({"rollout_id": "x"})
    with pytest.raises(ValueError, match="logprobs"):
        RecordedTurn((1,), (2, 3), (-0.1,))
