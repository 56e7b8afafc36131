"""One SFT run: a preflight that fails in seconds, a seeded held-out split, real runs on the tiny model."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from actors.sft.data import TokenizedExample
from actors.sft.train import PreflightError, preflight, run_sft, split_examples, step_line
from environments.traces.types import Skipped
from tests.actors.sft.conftest import tiny_config


def example(labels: tuple[int, ...], source: str = "s") -> TokenizedExample:
    return TokenizedExample(tuple(range(10, 10 + len(labels))), labels, source=source)


def trained(n: int = 4) -> TokenizedExample:
    return example(tuple([-100] * n + list(range(10 + n, 10 + 2 * n))))


def test_preflight_fails_fast_on_an_empty_dataset_and_names_the_skip_reasons(tmp_path: Path):
    started = time.perf_counter()
    with pytest.raises(PreflightError, match=r"no usable conversations \(2 skipped: \{'no assistant"):
        preflight([], [Skipped("a", "no assistant turn to learn from")] * 2, tmp_path, eval_fraction=0.1)
    assert time.perf_counter() - started < 1


def test_preflight_fails_on_an_all_masked_sample(tmp_path: Path):
    with pytest.raises(PreflightError, match="no assistant tokens.*first: t.jsonl#3"):
        preflight([trained(), example((-100,) * 6, "t.jsonl#3")], [], tmp_path, eval_fraction=0.1)


def test_preflight_fails_on_an_unwritable_output_dir(tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")  # a folder cannot be made under a file, even by root
    with pytest.raises(PreflightError, match="is not writable.*choose another out_dir"):
        preflight([trained(), trained()], [], blocker / "out", eval_fraction=0.1)


def test_preflight_needs_two_examples_for_a_held_out_split(tmp_path: Path):
    with pytest.raises(PreflightError, match="set eval_fraction=0"):
        preflight([trained()], [], tmp_path, eval_fraction=0.1)
    assert preflight([trained()], [], tmp_path, eval_fraction=0)["examples"] == 1


def test_preflight_reports_shapes_and_prints(tmp_path: Path):
    lines: list[str] = []
    figures = preflight([trained(4), trained(2)], [Skipped("x", "r")], tmp_path, eval_fraction=0.5,
                        log=lines.append)  # fmt: skip
    assert figures["examples"] == 2 and figures["skip_reasons"] == {"r": 1}
    assert (figures["tokens_min"], figures["tokens_max"]) == (4, 8)
    assert figures["assistant_token_fraction"] == 0.5 and "assistant fraction 0.5" in lines[0]


def test_the_split_is_seeded_and_holds_out_at_least_one():
    items = [trained(i + 1) for i in range(10)]
    train, held = split_examples(items, 0.01, seed=3)
    assert len(held) == 1 and len(train) == 9
    assert split_examples(items, 0.3, seed=3) == split_examples(items, 0.3, seed=3)
    capped_train, capped_held = split_examples(items, 0.3, seed=3, max_eval=2)
    assert len(capped_held) == 2 and len(capped_train) == len(items) - 2


def test_each_logged_step_is_one_line_with_the_loss_and_the_time_left():
    logs = {"loss": 1.23456, "mean_token_accuracy": 0.6123, "learning_rate": 1e-5, "epoch": 0.5}
    assert step_line(10, 40, logs, 30.0) == (
        "[sft] step 10/40  loss 1.2346  accuracy 0.612  lr 1.00e-05  30s, about 1m30s left"
    )
    assert step_line(40, 40, {"loss": 0.5}, 125.0) == "[sft] step 40/40  loss 0.5000  2m05s"


def test_held_out_losses_and_the_run_totals_are_no_step_line():
    assert step_line(0, 40, {"eval_loss": 1.0, "eval_runtime": 2.0}, 0.0) is None
    assert step_line(40, 40, {"train_runtime": 99.0, "train_loss": 0.7}, 99.0) is None


def test_run_sft_on_missing_traces_fails_before_training(tmp_path: Path, tiny_model: Path):
    cfg = tiny_config(tmp_path, tiny_model, traces=(str(tmp_path / "nope.jsonl"),))
    with pytest.raises(PreflightError, match="does not exist: fix `traces`"):
        run_sft(cfg, log=lambda _: None)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(PreflightError, match="no usable conversations"):
        run_sft(replace(cfg, traces=(str(tmp_path / "empty.jsonl"),)), log=lambda _: None)


def test_a_lora_run_on_the_tiny_model_lowers_the_loss_and_saves_the_adapter(tmp_path: Path, tiny_model: Path):
    lines: list[str] = []
    figures = run_sft(tiny_config(tmp_path, tiny_model), log=lines.append)
    out = tmp_path / "out"
    assert figures["steps"] == 3 and figures["examples_eval"] == 2 and figures["mask_method"] == "generation"
    assert figures["train_loss_last"] < figures["train_loss_first"]
    assert figures["eval_loss"] < figures["eval_loss_before"]
    for name in ("adapter_model.safetensors", "adapter_config.json", "tokenizer.json", "metrics.json"):
        assert (out / name).exists(), name
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 8
    record = json.loads((out / "metrics.json").read_text())
    assert record["eval_loss"] == figures["eval_loss"] and record["log_history"][0]["step"] == 0
    assert any("[[" in line for line in lines)  # the preflight printed a sample with its mask
    steps = [line.split("  ")[0] for line in lines if line.startswith("[sft] step ")]
    assert steps == ["[sft] step 1/3", "[sft] step 2/3", "[sft] step 3/3"]  # one line per logged step
