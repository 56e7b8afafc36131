"""The fused-head benchmark: each way really switches what TRL scores and puts TRL's choice back, unequal
work is refused, and both step kinds run end to end on the tiny model with equal losses."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks import fused_head


def test_each_way_switches_what_is_scored_and_restores_the_choice():
    from trl.trainer import utils

    before = utils._use_triton
    cpu = torch.device("cpu")
    with fused_head.scoring("every_position"):
        assert utils._use_triton(cpu) is False  # TRL's choice on CPU: every position
    with fused_head.scoring("labelled_only"):
        assert utils._use_triton(cpu) is True
    assert utils._use_triton is before


def test_steps_whose_losses_differ_are_not_compared():
    from trl.trainer import utils

    def step() -> float:  # a "step" whose result depends on the way: not the same work
        return 1.0 if utils._use_triton(torch.device("cpu")) else 2.0

    with pytest.raises(AssertionError, match="differ in loss"):
        fused_head.compare(step, repeats=1)


def test_both_step_kinds_run_with_equal_losses_and_print_the_figures(tiny_model, capsys):
    fused_head.main(["--rows", "1", "--repeats", "1"])
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    for kind in ("sft", "grpo"):
        assert figures[f"{kind}_every_position_step_median_s"] > 0
        assert figures[f"{kind}_labelled_only_step_median_s"] > 0
        assert figures[f"{kind}_loss"] > 0
        assert figures[f"{kind}_ratio"] > 0
