"""cluster.yaml passes Ray's own cluster-config validation and asks for 2-4 GPU workers."""

from __future__ import annotations

from pathlib import Path

import yaml

CLUSTER_YAML = Path(__file__).resolve().parents[1] / "cluster.yaml"


def test_cluster_yaml_is_valid_for_the_ray_cluster_launcher():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load(CLUSTER_YAML.read_text())
    validate_config(prepare_config(config))  # what `ray up` does first; raises on schema errors
    worker = config["available_node_types"]["h200"]
    assert (worker["min_workers"], worker["max_workers"]) == (2, 4)
    assert any(".[gpu]" in command for command in config["setup_commands"])
