"""The SFT job: its shipped config loads, and a run through the command line ends with one JSON line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from actors.config_loader import load_config
from actors.sft.config import SFTConfig
from actors.sft.sweep import sweep_points
from jobs.sft import DEFAULT_CONFIG, main
from tests.actors.sft.conftest import tiny_config


def test_the_tiny_config_loads_and_names_its_fields():
    cfg = load_config(SFTConfig, DEFAULT_CONFIG)
    assert cfg.model == "tiny" and cfg.lora.target_modules == ("all-linear",) and not cfg.bf16
    assert len(sweep_points(cfg)) >= 2
    assert load_config(SFTConfig, DEFAULT_CONFIG, ["lora.rank=4"]).lora.rank == 4


def test_a_full_finetune_through_the_cli_ends_with_one_json_line(tmp_path: Path, tiny_model: Path, capsys):
    cfg = tiny_config(tmp_path, tiny_model)
    main(["--config", str(DEFAULT_CONFIG), f"model={tiny_model}", f"traces=[{cfg.traces[0]}]",
          f"out_dir={tmp_path / 'full'}", "full_finetune=true", "sweep.ranks=[]", "max_steps=1",
          "eval_fraction=0", "max_length=512"])  # fmt: skip
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["full_finetune"] and figures["steps"] == 1 and figures["eval_loss"] is None
    assert (tmp_path / "full" / "model.safetensors").exists()


def test_traces_their_format_and_the_model_are_checked_before_a_model_is_built(tmp_path: Path, monkeypatch):
    from actors import models

    built = []
    monkeypatch.setattr(models, "resolve_model", built.append)  # building the preset's model: must not run
    traces = tmp_path / "t.jsonl"
    traces.write_text("")
    cases = {
        f"traces=[{tmp_path / 'nope.jsonl'}]": r"^error: trace file .*nope.jsonl does not exist: fix",
        "trace_format=bogus": r"^error: trace_format='bogus': choose one of pi-session, .*null",
        "model=nope": r"^error: model='nope': not a model preset, a folder or a Hub id",
    }
    for override, message in cases.items():
        with pytest.raises(SystemExit, match=message):
            main([f"traces=[{traces}]", f"out_dir={tmp_path / 'out'}", override])
    assert built == []
