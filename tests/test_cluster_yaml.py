"""cluster.yaml passes Ray's own cluster-config validation and asks for 2-4 GPU workers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

CLUSTER_YAML = Path(__file__).resolve().parents[1] / "cluster.yaml"


def test_cluster_yaml_is_valid_for_the_ray_cluster_launcher():
    from ray.autoscaler._private.util import prepare_config, validate_config

    config = yaml.safe_load(CLUSTER_YAML.read_text())
    validate_config(prepare_config(config))  # what `ray up` does first; raises on schema errors
    worker = config["available_node_types"]["h200"]
    assert (worker["min_workers"], worker["max_workers"]) == (2, 4)
    assert any(".[gpu]" in command for command in config["setup_commands"])


def test_machine_images_and_worker_storage_rights_are_explicit_and_local_installs_stay_home():
    config = yaml.safe_load(CLUSTER_YAML.read_text())
    text = CLUSTER_YAML.read_text()
    for node in config["available_node_types"].values():
        assert node["node_config"]["ImageId"].startswith("ami-")  # never Ray's old default image
    assert "driver 580" in text  # what the image must carry, said where it is chosen
    assert config["available_node_types"]["h200"]["node_config"]["IamInstanceProfile"]["Name"]
    assert {".venv", ".harnesses", "artifacts"} <= set(config["rsync_exclude"])


def test_every_node_installs_the_harnesses_where_the_launchers_look():
    config = yaml.safe_load(CLUSTER_YAML.read_text())
    install = [c for c in config["setup_commands"] if "scripts/harness-deps.sh" in c]
    assert len(install) == 1
    root = install[0].split("HA_HARNESSES=")[1].split()[0]
    starts = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    ray_starts = [c for c in starts if "ray start" in c]
    assert len(ray_starts) == 2 and all(f"HA_HARNESSES={root} ray start" in c for c in ray_starts)


def test_every_node_gets_node_20_before_the_harnesses_and_bubblewrap_its_privileges():
    config = yaml.safe_load(CLUSTER_YAML.read_text())
    commands = config["setup_commands"]
    node = next(i for i, c in enumerate(commands) if "scripts/node-deps.sh" in c)
    harnesses = next(i for i, c in enumerate(commands) if "scripts/harness-deps.sh" in c)
    assert node < harnesses and any("bubblewrap" in c for c in commands[:harnesses])
    options = " ".join(config["docker"]["run_options"])
    for needed in ("--cap-add=SYS_ADMIN", "seccomp=unconfined", "apparmor=unconfined"):
        assert needed in options


def test_the_reference_presets_sandbox_with_bubblewrap_on_the_nodes():
    from actors.config_loader import load_config
    from jobs.train import TrainJobConfig

    configs = CLUSTER_YAML.parent / "jobs" / "configs"
    for name in ("train-lfm3-1.7b", "train-lfm2.5-24b-a2b", "train-twil-8b"):
        assert load_config(TrainJobConfig, configs / f"{name}.yaml").rollouts.sandbox == "local"


@pytest.mark.parametrize(
    ("version", "ok"),
    [("v20.6.0", True), ("22.1.0", True), ("20.5.1", False), ("v12.22.9", False), ("x", False)],
)
def test_node_deps_accepts_node_20_6_and_later(version, ok):
    script = CLUSTER_YAML.parent / "scripts" / "node-deps.sh"
    assert (subprocess.run([str(script), "--check", version], check=False).returncode == 0) is ok
