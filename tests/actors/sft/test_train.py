"""The SFT job: config, a preflight that fails in seconds, real runs on the tiny model, and the sweep."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest

from actors.config_loader import ConfigError, load_config
from actors.sft.config import SFTConfig
from actors.sft.data import TokenizedExample
from actors.sft.sweep import SweepPoint, pick_best, sweep_points, trackio_rows
from actors.sft.train import PreflightError, preflight, run_sft, split_examples
from environments.traces.types import Skipped
from jobs.sft import DEFAULT_CONFIG, main

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        },
    }
]
FILES = ("a.py", "b.py", "main.py", "setup.cfg", "README.md", "test_x.py", "util.py", "cli.py")


def write_traces(path: Path, count: int = 8) -> Path:
    lines = []
    for i in range(count):
        name = FILES[i % len(FILES)]
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
            {"cmd": f"cat {name}"})}}  # fmt: skip
        messages = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"show me {name}"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"contents of {name}"},
            {"role": "assistant", "content": f"Here is {name}."},
        ]
        lines.append(json.dumps({"messages": messages, "tools": TOOLS}))
    path.write_text("\n".join(lines) + "\n")
    return path


def tiny_config(tmp_path: Path, tiny_model: Path, **changes) -> SFTConfig:
    base = SFTConfig(
        model=str(tiny_model),
        traces=(str(write_traces(tmp_path / "traces.jsonl")),),
        out_dir=str(tmp_path / "out"),
        learning_rate=5e-3,
        max_steps=3,
        batch_size=2,
        max_length=512,
        eval_fraction=0.25,
    )
    return replace(base, **changes)


def test_the_tiny_config_loads_and_names_its_fields():
    cfg = load_config(SFTConfig, DEFAULT_CONFIG)
    assert cfg.model == "tiny" and cfg.lora.target_modules == ("all-linear",) and not cfg.bf16
    assert len(sweep_points(cfg)) >= 2
    assert load_config(SFTConfig, DEFAULT_CONFIG, ["lora.rank=4"]).lora.rank == 4


def test_config_errors_name_the_field_and_the_fix(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 3e-4\nsweep:\n  learning_rates: [1e-3, 2e-3]\n")
    loaded = load_config(SFTConfig, path)  # YAML 1.1 reads 3e-4 as text; the loader makes it the number
    assert loaded.learning_rate == 3e-4 and loaded.sweep.learning_rates == (1e-3, 2e-3)
    path.write_text("learning_rate: fast\n")
    with pytest.raises(ConfigError, match=r"learning_rate='fast': .*; give a number"):
        load_config(SFTConfig, path)
    with pytest.raises(ConfigError, match="drop sweep.ranks"):
        load_config(SFTConfig, overrides=["full_finetune=true", "sweep.ranks=[4]"])
    with pytest.raises(ConfigError, match="unknown key.*lora_rank"):
        load_config(SFTConfig, overrides=["lora_rank=4"])


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


def test_a_full_finetune_through_the_cli_ends_with_one_json_line(tmp_path: Path, tiny_model: Path, capsys):
    cfg = tiny_config(tmp_path, tiny_model)
    main(["--config", str(DEFAULT_CONFIG), f"model={tiny_model}", f"traces=[{cfg.traces[0]}]",
          f"out_dir={tmp_path / 'full'}", "full_finetune=true", "sweep.ranks=[]", "max_steps=1",
          "eval_fraction=0", "max_length=512"])  # fmt: skip
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["full_finetune"] and figures["steps"] == 1 and figures["eval_loss"] is None
    assert (tmp_path / "full" / "model.safetensors").exists()


def test_the_best_point_is_the_lowest_held_out_loss_and_failures_never_win():
    rows = [
        {"point": "a", "status": "ok", "eval_loss": 2.0},
        {"point": "b", "status": "failed", "eval_loss": None},
        {"point": "c", "status": "ok", "eval_loss": 1.5},
        {"point": "d", "status": "ok", "eval_loss": None, "train_loss_last": 1.0},
    ]
    assert pick_best(rows)["point"] == "d"
    assert pick_best(rows[:3])["point"] == "c"
    assert pick_best(rows[1:2]) is None
    assert SweepPoint(0.001, 8, 512).name == "lr0.001-r8-len512"


def test_trackio_rows_keep_the_training_and_held_out_metrics():
    history = [
        {"eval_loss": 3.0, "eval_entropy": 1.0, "eval_runtime": 0.1, "step": 0},
        {"loss": 2.5, "entropy": 1.1, "mean_token_accuracy": 0.2, "learning_rate": 1e-3, "step": 1},
        {"train_runtime": 1.0, "train_loss": 2.5, "step": 1},
    ]
    assert trackio_rows(history) == [
        (0, {"eval_loss": 3.0, "eval_entropy": 1.0}),
        (1, {"loss": 2.5, "entropy": 1.1, "mean_token_accuracy": 0.2, "learning_rate": 1e-3}),
    ]


def test_a_two_point_sweep_runs_as_ray_tasks_and_logs_to_one_trackio_project(
    tmp_path: Path, tiny_model: Path, ray_cluster
):
    from actors.sft.sweep import run_sweep

    cfg = tiny_config(tmp_path, tiny_model, max_steps=2, batch_size=4)
    cfg = replace(cfg, sweep=replace(cfg.sweep, learning_rates=(1e-3, 1e-2), trackio_project="sft-test",
                                     trackio_dir=str(tmp_path / "trackio")))  # fmt: skip
    figures = run_sweep(cfg, log=lambda _: None)
    out = tmp_path / "out"
    results = json.loads((out / "results.json").read_text())
    runs = {r["point"]: r for r in results["runs"]}
    assert (
        figures["points"] == 2
        and figures["failed"] == 0
        and set(runs)
        == {
            "lr0.001-r8-len512",
            "lr0.01-r8-len512",
        }
    )
    best = min(runs.values(), key=lambda r: r["eval_loss"])
    assert figures["best"] == results["best"]["point"] == best["point"]
    assert f"**{best['point']}**" in (out / "results.md").read_text()
    for name in runs:
        assert (out / name / "adapter_model.safetensors").exists()
    assert figures["trackio_dir"] == str(tmp_path / "trackio")
    db = sqlite3.connect(tmp_path / "trackio" / "sft-test.db")
    logged = db.execute("select run_name, metrics from metrics").fetchall()
    assert {name for name, _ in logged} == set(runs)
    keys = set().union(*(json.loads(m) for _, m in logged))
    assert {"loss", "entropy", "mean_token_accuracy", "learning_rate", "eval_loss"} <= keys
