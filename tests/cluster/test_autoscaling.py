"""Autoscaling with Ray's fake multi-node provider: the node types are cluster.yaml's own (the head's and the
H200 worker's resources), started with no worker (``min_workers: 0`` here; the file asks for 2). The
placement groups the train job asks for with a reference preset (``train-lfm3-1.7b``: the serving and
trainer bundles with GPUs, then each trainer's rollout slots) do not fit on the head, so the autoscaler
adds workers until every group is placed.

The fake provider starts each worker as a raylet on this machine; resources are logical (no GPU is used).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.raynodes import ray_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]

PLACE = textwrap.dedent(
    """
    import json, sys, time
    import ray
    from ray.util.placement_group import placement_group

    from actors.placement import serving_bundle
    from actors.config_loader import load_config
    from jobs.train import TrainJobConfig, session_bundles, trainer_bundles

    ray.init(address=sys.argv[1])
    cfg = load_config(TrainJobConfig, sys.argv[2])
    before = [n for n in ray.nodes() if n["Alive"]]
    stack = placement_group([serving_bundle("gpu"), *trainer_bundles(cfg)], strategy=cfg.serving.placement)
    sessions = [placement_group(session_bundles(cfg)) for _ in cfg.harnesses]
    start = time.monotonic()
    ray.get([g.ready() for g in (stack, *sessions)], timeout=float(sys.argv[3]))
    after = [n for n in ray.nodes() if n["Alive"]]
    print(json.dumps({
        "nodes_before": len(before),
        "nodes_after": len(after),
        "placed_s": round(time.monotonic() - start, 1),
        "gpus": sum(n["Resources"].get("GPU", 0) for n in after),
        "cpus": sum(n["Resources"].get("CPU", 0) for n in after),
    }))
    """
)


def fake_config(cluster: dict, gcs: str) -> dict:
    """cluster.yaml's node types under the fake provider, workers starting from zero."""
    types = {}
    for name, node_type in cluster["available_node_types"].items():
        if name == cluster["head_node_type"]:
            continue
        types[name] = {
            "resources": dict(node_type["resources"]),
            "node_config": {},
            "min_workers": 0,
            "max_workers": node_type["max_workers"],
        }
    head = cluster["available_node_types"][cluster["head_node_type"]]
    types["ray.head.default"] = {"resources": dict(head["resources"]), "node_config": {}, "max_workers": 0}
    return {
        "cluster_name": "fake-autoscaling",
        "max_workers": cluster["max_workers"],
        "upscaling_speed": cluster["upscaling_speed"],
        "idle_timeout_minutes": 1,
        "provider": {"type": "fake_multinode", "gcs_address": gcs, "disable_launch_config_check": True},
        "auth": {"ssh_user": "ray"},
        "available_node_types": types,
        "head_node_type": "ray.head.default",
        "file_mounts": {},
        "cluster_synced_files": [],
        "file_mounts_sync_continuously": False,
        "rsync_exclude": [],
        "rsync_filter": [],
        "initialization_commands": [],
        "setup_commands": [],
        "head_setup_commands": [],
        "worker_setup_commands": [],
        "head_start_ray_commands": [],
        "worker_start_ray_commands": [],
    }


def test_a_job_that_needs_more_than_the_head_gets_workers_from_cluster_yaml(tmp_path: Path):
    cluster = yaml.safe_load((REPO / "cluster.yaml").read_text())
    head = cluster["available_node_types"][cluster["head_node_type"]]["resources"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env |= {"RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1", "PYTHONPATH": str(REPO)}
    config_path = tmp_path / "autoscaling.yaml"

    def head_args(gcs: str) -> list[str]:
        config_path.write_text(json.dumps(fake_config(cluster, gcs)))
        return [f"--autoscaling-config={config_path}"]

    with ray_cluster(
        env, tmp_path / "ray", cpus=int(head.get("CPU", 0)), head_extra=head_args, dashboard=False
    ) as info:
        placed = subprocess.run(
            [sys.executable, "-c", PLACE, info.gcs, str(REPO / "jobs/configs/train-lfm3-1.7b.yaml"), "240"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=400,
        )
    assert placed.returncode == 0, (placed.stdout + placed.stderr)[-6000:]
    figures = json.loads(placed.stdout.strip().splitlines()[-1])
    print(json.dumps(figures))
    assert figures["nodes_before"] == 1  # the head alone, which has no GPU
    assert figures["nodes_after"] > 1 and figures["gpus"] >= 1 + 3 * 0.25
