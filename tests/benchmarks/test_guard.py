"""The guard benchmark's null case: the check-time half at a tiny size, and the sessions it builds."""

from __future__ import annotations

import json

from benchmarks import guard
from benchmarks.guard_traces import MAX_OUTPUT, build_session, load_harnesses


def test_sessions_start_from_the_captured_prompts_with_distinct_calls_and_bounded_outputs() -> None:
    harnesses = load_harnesses()
    assert [h.name for h in harnesses] == ["pi", "oc", "hermes"]
    assert all(2000 <= len(h.system) <= 9500 for h in harnesses)
    for h in harnesses:
        messages, calls = build_session(h, 40, seed=3)
        assert messages[0] == {"role": "system", "content": h.system} and len(messages) == 2 + 2 * 40
        texts = [(c["function"]["name"], c["function"]["arguments"]) for c in calls]
        assert len(set(texts)) == len(texts)
        declared = {t["function"]["name"] for t in h.tools}
        assert {name for name, _ in texts} <= declared
        outputs = [len(m["content"]) for m in messages if m["role"] == "tool"]
        assert max(outputs) <= MAX_OUTPUT and min(outputs) > 0
    assert build_session(harnesses[0], 5, seed=1) == build_session(harnesses[0], 5, seed=1)


def test_tiny_run_prints_one_json_line_with_every_figure(capsys) -> None:
    figures = guard.main(["--samples", "3", "--ref-samples", "2", "--lengths", "1,3", "--no-proxy"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(last) == figures
    for length in (1, 3):
        assert figures[f"samples_at_{length}"] == 3 and figures[f"ref_samples_at_{length}"] == 2
        for key in ("check_p50_ms", "check_p99_ms", "atif_full_p50_ms", "atif_full_p99_ms"):
            assert figures[f"{key}_at_{length}"] > 0
        assert figures[f"check_p50_ms_at_{length}"] <= figures[f"check_p99_ms_at_{length}"]
