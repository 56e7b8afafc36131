"""The CPU checkpointing benchmark: each setting and allocator measured in its own process on a real model,
beside the estimate the trainer's ``auto`` decides by."""

from __future__ import annotations

import json

from benchmarks import cpu_checkpointing


def test_both_settings_are_measured_beside_the_estimate(tiny_model, capsys):
    cpu_checkpointing.main(["--preset", "tiny", "--tokens", "1024", "--checkpointing", "off", "on"])
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["t1024_estimate_gib"] > 0
    for setting in ("off", "on"):
        for allocator in ("glibc", "mmap"):
            key = f"t1024_ckpt_{setting}_{allocator}"
            assert f"{key}_status" not in figures
            assert figures[f"{key}_s"] > 0
            assert figures[f"{key}_peak_gib"] >= figures[f"{key}_row_gib"] >= 0
            assert isinstance(figures[f"{key}_held_gib"], float)


def test_a_setting_whose_process_dies_is_reported_and_the_others_kept(tiny_model, capsys, monkeypatch):
    real_run = cpu_checkpointing.subprocess.run

    def killed_when_off(command, **kwargs):
        if command[-2] == "off":
            return cpu_checkpointing.subprocess.CompletedProcess(command, -9, "", "")
        return real_run(command, **kwargs)

    monkeypatch.setattr(cpu_checkpointing.subprocess, "run", killed_when_off)
    cpu_checkpointing.main(["--preset", "tiny", "--tokens", "512", "--allocator", "mmap"])
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["t512_ckpt_off_mmap_status"] == "exit -9"
    assert figures["t512_ckpt_on_mmap_s"] > 0
