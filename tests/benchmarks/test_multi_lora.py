"""The multi-LoRA benchmark's work and accounting (no vLLM): the sessions are the harnesses' real requests,
seeded per checkpoint, with growing history and forced output lengths; identical timings both ways give
ratios of exactly 1.0; ways that generated different tokens stop the run."""

from __future__ import annotations

import argparse
import json
from itertools import pairwise

import pytest

from benchmarks.multi_lora import (
    OUTPUT_TOKENS,
    TURNS,
    Stopwatch,
    TokenCountMismatch,
    agent_sessions,
    check_same_tokens,
    compare,
    parse_range,
    request_body,
    summarize,
    way_order,
)
from environments.harness_prompts import HARNESSES, harness_request


def test_sessions_are_the_same_for_the_same_seed_and_differ_across_checkpoints_and_seeds():
    assert agent_sessions(3, 6) == agent_sessions(3, 6)
    lengths = {c: [[t.output_tokens for t in s.turns] for s in agent_sessions(c, 6)] for c in range(4)}
    assert len({json.dumps(v) for v in lengths.values()}) == 4
    assert agent_sessions(0, 6, seed=1) != agent_sessions(0, 6, seed=0)


def test_each_session_is_its_harness_real_request_with_several_turns_of_growing_history():
    sessions = agent_sessions(1, 6)
    assert sorted(s.harness for s in sessions) == sorted(HARNESSES * 2)
    for session in sessions:
        captured = harness_request(session.harness)
        tool_names = {tool["function"]["name"] for tool in captured["tools"]}
        assert list(session.tools) == captured["tools"]
        assert TURNS[0] <= len(session.turns) <= TURNS[1]
        for turn in session.turns:
            assert turn.messages[0] == captured["messages"][0]  # the real system prompt
            user = turn.messages[1]
            assert user["role"] == "user" and type(user["content"]) is type(
                captured["messages"][1]["content"]
            )
            assert OUTPUT_TOKENS[0] <= turn.output_tokens <= OUTPUT_TOKENS[1]
        for earlier, later in pairwise(session.turns):
            assert later.messages[: len(earlier.messages)] == earlier.messages
            call, result = later.messages[len(earlier.messages) :]
            (tool_call,) = call["tool_calls"]
            assert call["role"] == "assistant" and tool_call["function"]["name"] in tool_names
            assert "command" in json.loads(tool_call["function"]["arguments"])
            assert result["role"] == "tool" and result["tool_call_id"] == tool_call["id"]


def test_a_request_forces_its_turn_output_length():
    session = agent_sessions(0, 1)[0]
    turn = session.turns[-1]
    body = request_body("ckpt-v0", session, turn)
    assert body["max_tokens"] == body["min_tokens"] == turn.output_tokens
    assert body["ignore_eos"] is True and body["model"] == "ckpt-v0"
    assert body["messages"] == list(turn.messages) and body["tools"] == list(session.tools)
    assert session.completion_tokens == sum(t.output_tokens for t in session.turns)


def test_laps_add_up_to_the_wall_time_less_what_is_skipped():
    ticks = iter([0.0, 2.0, 3.0, 10.0, 13.0, 14.0])
    watch = Stopwatch(clock=lambda: next(ticks))
    watch.lap("start")  # 2
    watch.lap("eval")  # 1
    watch.skip()  # 7 left out
    watch.lap("eval")  # 3
    watch.lap("stop")  # 1
    assert watch.phases_s == {"start": 2.0, "eval": 4.0, "stop": 1.0}


def test_identical_timings_both_ways_give_ratios_of_one_and_a_slower_merged_way_more():
    phases = {"start": 30.0, "publish": 2.0, "eval": 50.0, "stop": 5.0}
    null = compare(phases, dict(phases))
    assert null["ratio"] == 1.0 and null["eval_phase_ratio"] == 1.0
    assert null["multi_lora_s"] == null["merged_s"] == 87.0 and null["eval_phase_multi_s"] == 50.0
    merged = {"merge": 9.0, "start": 90.0, "eval": 100.0, "stop": 15.0}
    figures = compare(phases, merged)
    assert figures["ratio"] == pytest.approx(214.0 / 87.0)
    assert figures["eval_phase_ratio"] == 2.0
    assert figures["merged_merge_s"] == 9.0 and figures["multi_publish_s"] == 2.0


def test_summary_is_each_figure_median_with_its_min_max_spread():
    rows = [
        {"ratio": 3.0, "merged_s": 10.0},
        {"ratio": 1.0, "merged_s": 30.0},
        {"ratio": 2.0, "merged_s": 20.0},
    ]
    assert summarize(rows) == {
        "ratio": 2.0,
        "ratio_spread": [1.0, 3.0],
        "merged_s": 20.0,
        "merged_s_spread": [10.0, 30.0],
    }
    assert summarize([{"ratio": 1.0}, {"ratio": 4.0}]) == {"ratio": 2.5, "ratio_spread": [1.0, 4.0]}


def test_ways_that_generated_different_tokens_stop_the_run():
    check_same_tokens({"multi": 5000, "merged": 5000}, 5000)
    with pytest.raises(TokenCountMismatch, match="expected 5000 each way.*multi 5000, merged 4990"):
        check_same_tokens({"multi": 5000, "merged": 4990}, 5000)
    with pytest.raises(TokenCountMismatch):
        check_same_tokens({"multi": 4990, "merged": 4990}, 5000)  # equal, but not what was forced


def test_the_order_alternates_and_ranges_parse():
    assert [way_order(r) for r in range(3)] == [("multi", "merged"), ("merged", "multi"), ("multi", "merged")]
    assert parse_range("3-6") == (3, 6) and parse_range("4") == (4, 4)
    for bad in ("6-3", "0", "a-b"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_range(bad)
