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


def test_every_node_installs_the_harnesses_where_the_launchers_look():
    config = yaml.safe_load(CLUSTER_YAML.read_text())
    install = [c for c in config["setup_commands"] if "scripts/harness-deps.sh" in c]
    assert len(install) == 1
    root = install[0].split("HA_HARNESSES=")[1].split()[0]
    starts = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    ray_starts = [c for c in starts if "ray start" in c]
    assert len(ray_starts) == 2 and all(f"HA_HARNESSES={root} ray start" in c for c in ray_starts)
