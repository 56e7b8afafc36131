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
        ("guard.proxy=nowhere", "guard: proxy='nowhere': choose auto, every_node or head_only"),
        ("guard.min_replicas=3", r"guard: min_replicas=3, max_replicas=1: need 1 <= minimum <= maximum"),
    ],
)
def test_a_bad_placement_names_the_choices(tmp_path, override, message):
    path = tmp_path / "train.yaml"
    path.write_text("trainer: {max_steps: 1}\n")
    with pytest.raises((ConfigError, ValueError), match=message):
        load_config(TrainJobConfig, path, (override,))


def test_the_proxy_is_on_every_node_alone_and_at_the_head_on_a_cluster():
    from jobs.stack import resolve_proxy

    assert resolve_proxy("auto", 1) == "every_node" and resolve_proxy("auto", 3) == "head_only"
    assert resolve_proxy("head_only", 1) == "head_only" and resolve_proxy("every_node", 1) == "every_node"
    with pytest.raises(
        ValueError, match="every_node on a cluster of 3 nodes.*set guard.proxy=auto or head_only"
    ):
        resolve_proxy("every_node", 3)
