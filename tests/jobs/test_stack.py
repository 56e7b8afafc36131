"""Placement settings of the serving stack, checked at config load."""

from __future__ import annotations

import pytest

from actors.config_loader import ConfigError, load_config
from jobs.sections import GuardSection, ServingSection
from jobs.train import TrainJobConfig


def test_known_strategies_and_proxies_pass():
    assert ServingSection(placement="STRICT_SPREAD").placement == "STRICT_SPREAD"
    assert GuardSection(proxy="head_only", min_replicas=2, max_replicas=4).replicas == (2, 4)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("serving.placement=spread_out", "serving: placement='spread_out': choose one of PACK, SPREAD"),
        ("guard.proxy=nowhere", "guard: proxy='nowhere': choose every_node or head_only"),
        ("guard.min_replicas=3", r"guard: min_replicas=3, max_replicas=1: need 1 <= minimum <= maximum"),
    ],
)
def test_a_bad_placement_names_the_choices(tmp_path, override, message):
    path = tmp_path / "train.yaml"
    path.write_text("trainer: {max_steps: 1}\n")
    with pytest.raises((ConfigError, ValueError), match=message):
        load_config(TrainJobConfig, path, (override,))
