"""The smoke run's first stage for a real model: its SFT adapter, trained once and kept, and the
demonstrations it needs written on a fresh machine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from actors.config_loader import load_config
from jobs.smoke import CONFIGS, SmokeConfig


def test_a_trained_sft_adapter_is_kept_and_its_losses_reported(tmp_path: Path, capsys) -> None:
    from dataclasses import replace

    from jobs.smoke import load_sft_config, warm_start

    cfg = load_config(SmokeConfig, CONFIGS / "smoke-real.yaml")
    sft = replace(load_sft_config(cfg), out_dir=str(tmp_path))
    (tmp_path / "adapter_config.json").write_text("{}")
    metrics = {"steps": 60, "train_loss_first": 3.1, "train_loss_last": 1.2, "eval_loss_before": 3.4}
    (tmp_path / "metrics.json").write_text(json.dumps({**metrics, "eval_loss": 1.5, "log_history": []}))
    figures = warm_start(sft)
    assert figures == {**metrics, "eval_loss": 1.5, "train_s": None}
    said = capsys.readouterr().out
    assert "kept from" in said and "train loss 3.1 -> 1.2; held-out loss 3.4 -> 1.5" in said


def test_missing_demonstrations_are_written_and_other_files_left_to_the_preflight(tmp_path: Path) -> None:
    from jobs.smoke import write_missing_demos

    wanted = tmp_path / "demos" / "pi-eval.jsonl"
    other = tmp_path / "mine.jsonl"
    write_missing_demos([str(wanted), str(other)])
    lines = wanted.read_text().splitlines()
    assert lines and json.loads(lines[0])["messages"][0]["role"] == "system"
    assert not other.exists() and not (tmp_path / "demos" / "opencode-eval.jsonl").exists()


def test_an_sft_adapter_to_train_gets_its_missing_demonstrations_first(tmp_path: Path, monkeypatch) -> None:
    """A fresh machine: the stage writes the demonstrations the SFT config names before it trains."""
    from dataclasses import replace

    import actors.models
    from jobs import smoke

    trace = tmp_path / "demos" / "pi-train.jsonl"
    seen = []

    def fake_sft(cfg):
        seen.append([Path(t).exists() for t in cfg.traces])
        return {"steps": 1}

    monkeypatch.setattr(actors.models, "resolve_model_path", lambda model: model)
    cfg = load_config(SmokeConfig, CONFIGS / "smoke-real.yaml")
    sft = replace(smoke.load_sft_config(cfg), out_dir=str(tmp_path / "sft"), traces=(str(trace),))
    assert smoke.warm_start(sft, train=fake_sft)["steps"] == 1
    assert seen == [[True]]


def test_a_stage_run_in_a_child_process_returns_its_result_and_raises_its_error() -> None:
    """The SFT stage trains in a child process (``in_child``), whose memory goes back when it ends."""
    import os

    from jobs.smoke import in_child

    assert in_child(os.getpid) != os.getpid()
    assert in_child(max, 3, 7) == 7
    with pytest.raises(FileNotFoundError):
        in_child(os.stat, "/nonexistent-path-for-a-test")


def test_missing_demonstrations_come_from_the_task_set_the_smoke_config_names(tmp_path: Path) -> None:
    from jobs.smoke import write_missing_demos

    wanted = tmp_path / "pi-train.jsonl"
    write_missing_demos([str(wanted)], "row-count", 4)
    ids = [json.loads(line)["meta"]["task_id"] for line in wanted.read_text().splitlines()]
    assert len(ids) == 48 + 4 and all(i.startswith("rows-") for i in ids)


@pytest.mark.parametrize(
    ("override", "named"),
    [("demo_tasks=rows", "demo_tasks='rows'"), ("demo_extra=4", "demo_extra=4")],
)
def test_a_demonstration_set_the_stage_cannot_write_is_refused_at_load(override: str, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        load_config(SmokeConfig, CONFIGS / "smoke.yaml", [override])
