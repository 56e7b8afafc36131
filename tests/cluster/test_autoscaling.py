"""Autoscaling with Ray's fake multi-node provider: the node types are cluster.yaml's own (the head's and the
H200 worker's resources, ``min_workers`` and ``max_workers`` as written). The autoscaler first brings the
workers up to ``min_workers``; the placement groups the train job asks for with a reference preset
(``train-lfm3-1.7b``: the serving and trainer bundles with GPUs, then each trainer's rollout slots) plus a
second run's worth of whole-node demand do not fit on those, so it adds workers until every group is placed;
once the groups are removed, the extra workers go idle and it removes them again, down to ``min_workers``
and never below. The idle timeout is one minute here (cluster.yaml's is ten) so the test sees it.

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
    from ray.util.placement_group import placement_group, remove_placement_group

    from actors.placement import serving_bundle
    from actors.config_loader import load_config
    from jobs.train import TrainJobConfig, session_bundles, trainer_bundles

    ray.init(address=sys.argv[1])
    cfg = load_config(TrainJobConfig, sys.argv[2])
    timeout, floor = float(sys.argv[3]), int(sys.argv[4])
    alive = lambda: sum(1 for n in ray.nodes() if n["Alive"])

    def wait_for(nodes, deadline):
        while alive() != nodes and time.monotonic() < deadline:
            time.sleep(1)
        return alive()

    start = time.monotonic()
    at_min = wait_for(1 + floor, start + timeout)
    up_s = round(time.monotonic() - start, 1)
    stack = placement_group([serving_bundle("gpu"), *trainer_bundles(cfg)], strategy=cfg.serving.placement)
    sessions = [placement_group(session_bundles(cfg)) for _ in cfg.harnesses]
    whole_nodes = placement_group([{"GPU": 8}] * floor, strategy="STRICT_SPREAD")  # a second run's demand
    groups = (stack, *sessions, whole_nodes)
    start = time.monotonic()
    ray.get([g.ready() for g in groups], timeout=timeout)
    placed_s = round(time.monotonic() - start, 1)
    peak = alive()
    gpus = sum(n["Resources"].get("GPU", 0) for n in ray.nodes() if n["Alive"])
    for group in groups:
        remove_placement_group(group)
    start = time.monotonic()
    lowest = peak
    while time.monotonic() < start + timeout and lowest > 1 + floor:
        time.sleep(1)
        lowest = min(lowest, alive())
    down_s = round(time.monotonic() - start, 1)
    time.sleep(5)  # and it stays there: nothing goes below min_workers
    print(json.dumps({
        "nodes_at_min": at_min, "up_s": up_s, "nodes_peak": peak, "placed_s": placed_s, "gpus": gpus,
        "nodes_after_idle": lowest, "down_s": down_s, "nodes_final": alive(),
    }))
    """
)


def fake_config(cluster: dict, gcs: str) -> dict:
    """cluster.yaml's node types and worker counts under the fake provider (idle timeout one minute)."""
    types = {}
    for name, node_type in cluster["available_node_types"].items():
        if name == cluster["head_node_type"]:
            continue
        types[name] = {
            "resources": dict(node_type["resources"]),
            "node_config": {},
            "min_workers": node_type["min_workers"],
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


def test_workers_start_at_min_scale_up_for_a_job_and_back_down_to_min_when_idle(tmp_path: Path):
    cluster = yaml.safe_load((REPO / "cluster.yaml").read_text())
    head = cluster["available_node_types"][cluster["head_node_type"]]["resources"]
    worker = cluster["available_node_types"]["h200"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env |= {"RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1", "PYTHONPATH": str(REPO)}
    config_path = tmp_path / "autoscaling.yaml"

    def head_args(gcs: str) -> list[str]:
        config_path.write_text(json.dumps(fake_config(cluster, gcs)))
        return [f"--autoscaling-config={config_path}"]

    floor = worker["min_workers"]
    with ray_cluster(
        env, tmp_path / "ray", cpus=int(head.get("CPU", 0)), head_extra=head_args, dashboard=False
    ) as info:
        placed = subprocess.run(
            [
                sys.executable,
                "-c",
                PLACE,
                info.gcs,
                str(REPO / "jobs/configs/train-lfm3-1.7b.yaml"),
                "300",
                str(floor),
            ],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=1000,
        )
    assert placed.returncode == 0, (placed.stdout + placed.stderr)[-6000:]
    figures = json.loads(placed.stdout.strip().splitlines()[-1])
    print(json.dumps(figures))
    assert floor >= 1 and figures["nodes_at_min"] == 1 + floor  # the head and min_workers, before any job
    assert 1 + floor < figures["nodes_peak"] <= 1 + worker["max_workers"]
    assert figures["nodes_after_idle"] == figures["nodes_final"] == 1 + floor  # back to min, not below
