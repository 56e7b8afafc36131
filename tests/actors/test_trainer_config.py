"""The trainer's memory settings, decided without loading a model."""

from __future__ import annotations

import pytest

from actors.trainer import CHECKPOINTING_MIN_TOKENS, TrainerConfig, checkpointing_wanted


@pytest.mark.parametrize(
    ("setting", "cuda", "budget", "wanted"),
    [
        ("auto", False, 131072, False),  # CPU: the tiny model needs no saving
        ("auto", True, 131072, True),  # a 24B preset's 128K-token micro-batches
        ("auto", True, CHECKPOINTING_MIN_TOKENS, True),
        ("auto", True, 4096, False),
        ("auto", True, 0, True),  # one unbounded sample per micro-batch
        ("on", False, 512, True),
        ("off", True, 131072, False),
    ],
)
def test_gradient_checkpointing_follows_the_setting_then_device_and_budget(setting, cuda, budget, wanted):
    assert checkpointing_wanted(setting, cuda, budget) is wanted


def test_a_bad_checkpointing_setting_names_the_choices():
    with pytest.raises(ValueError, match="gradient_checkpointing='sometimes': must be on, off or auto"):
        TrainerConfig("pi", "m", "http://x/v1", "/tmp/o", gradient_checkpointing="sometimes")
