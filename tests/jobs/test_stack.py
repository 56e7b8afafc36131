"""Placement settings of the serving stack, checked at config load."""

from __future__ import annotations

import pytest

from jobs.config import ConfigError, load_config
from jobs.stack import placement_problems
from jobs.train import TrainJobConfig


def test_known_strategies_and_proxies_pass():
    assert placement_problems("STRICT_SPREAD", "head_only") == []
    assert placement_problems("PACK", "every_node") == []


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("placement=spread_out", "placement='spread_out': choose one of PACK, SPREAD"),
        ("guard_proxy=nowhere", "every_node or head_only"),
    ],
)
def test_a_bad_placement_names_the_choices(tmp_path, override, message):
    path = tmp_path / "train.yaml"
    path.write_text("max_steps: 1\n")
    with pytest.raises((ConfigError, ValueError), match=message):
        load_config(TrainJobConfig, path, (override,))
