"""Autoscaling with Ray's fake multi-node provider and cluster.yaml as written: its node types (the head's
and the H200 worker's resources) and worker counts. The cluster comes up with ``min_workers`` workers; the
placement groups the train job asks for with a reference preset (``train-lfm3-1.7b``: the serving and
trainer bundles with GPUs, then each trainer's rollout slots) are placed on them, not on the GPU-less head;
a demand for one whole node more than the floor adds a worker; once it is gone, the idle worker is removed
(idle timeout half a minute here) and the cluster stays at the floor, never under it.

Ray's fake provider names each worker by a node id it makes up (``RAY_OVERRIDE_NODE_ID_FOR_TESTING``) and
reports that id as the node's address; ``use_node_id_as_ip`` makes the autoscaler key its load metrics by
node id too. Without it, no worker's heartbeat matches its address, every worker looks dead after the
heartbeat timeout, and the autoscaler replaces workers below ``min_workers`` over and over.

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
    timeout, floor, watch_s = float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    alive = lambda: sum(1 for n in ray.nodes() if n["Alive"])

    def wait_for(done, deadline):
        while not done(alive()) and time.monotonic() < deadline:
            time.sleep(1)
        return alive()

    def place(groups):
        ray.get([g.ready() for g in groups], timeout=timeout)
        return alive(), sum(n["Resources"].get("GPU", 0) for n in ray.nodes() if n["Alive"])

    start = time.monotonic()
    at_min = wait_for(lambda n: n == 1 + floor, start + timeout)
    up_s = round(time.monotonic() - start, 1)
    job = [placement_group([serving_bundle("gpu"), *trainer_bundles(cfg)], strategy=cfg.serving.placement)]
    job += [placement_group(session_bundles(cfg)) for _ in cfg.harnesses]
    nodes_with_job, gpus = place(job)
    for group in job:
        remove_placement_group(group)
    start = time.monotonic()  # a demand past the floor: one whole node more than min_workers gives
    whole = placement_group([{"GPU": 8}] * (floor + 1), strategy="STRICT_SPREAD")
    peak, _ = place([whole])
    placed_s = round(time.monotonic() - start, 1)
    remove_placement_group(whole)
    start = time.monotonic()
    timeline = []  # nodes alive each second after the demand is gone
    while time.monotonic() < start + watch_s:
        timeline.append(alive())
        time.sleep(1)
    down = next((i for i, n in enumerate(timeline) if n == 1 + floor), None)
    print(json.dumps({
        "nodes_at_min": at_min, "up_s": up_s, "nodes_with_job": nodes_with_job, "gpus": gpus,
        "nodes_peak": peak, "placed_s": placed_s, "down_s": down, "timeline": timeline,
    }))
    """
)


def fake_config(cluster: dict, gcs: str) -> dict:
    """cluster.yaml's node types and worker counts under the fake provider (idle timeout half a minute)."""
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
        "idle_timeout_minutes": 0.5,
        "provider": {  # launch_multiple: a request for n nodes starts n (else one, and the rest "fail")
            "type": "fake_multinode",
            "gcs_address": gcs,
            "disable_launch_config_check": True,
            "launch_multiple": True,
            "use_node_id_as_ip": True,  # the fake nodes' addresses are their ids (module docstring)
            "disable_node_updaters": True,  # nothing to set up on a fake node
        },
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


def test_workers_start_at_min_take_a_job_scale_up_past_it_and_come_back_down_when_idle(tmp_path: Path):
    cluster = yaml.safe_load((REPO / "cluster.yaml").read_text())
    head = cluster["available_node_types"][cluster["head_node_type"]]["resources"]
    worker = cluster["available_node_types"]["h200"]
    floor = worker["min_workers"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env |= {"RAY_FAKE_CLUSTER": "1", "AUTOSCALER_UPDATE_INTERVAL_S": "1", "PYTHONPATH": str(REPO)}
    config_path = tmp_path / "autoscaling.yaml"

    def head_args(gcs: str) -> list[str]:
        config_path.write_text(json.dumps(fake_config(cluster, gcs)))
        return [f"--autoscaling-config={config_path}"]

    job = str(REPO / "jobs/configs/train-lfm3-1.7b.yaml")
    with ray_cluster(
        env, tmp_path / "ray", cpus=int(head.get("CPU", 0)), head_extra=head_args, dashboard=False
    ) as info:
        placed = subprocess.run(
            [sys.executable, "-c", PLACE, info.gcs, job, "300", str(floor), "150"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=1200,
        )
    assert placed.returncode == 0, (placed.stdout + placed.stderr)[-6000:]
    figures = json.loads([line for line in placed.stdout.splitlines() if line.startswith("{")][-1])
    print(json.dumps(figures))
    assert floor >= 1 and figures["nodes_at_min"] == 1 + floor  # the head and min_workers, before any job
    assert figures["gpus"] >= 1 + 3 * 0.25  # the job's groups placed on workers (the head has no GPU)
    assert figures["nodes_peak"] == 2 + floor <= 1 + worker["max_workers"]  # one node past the floor
    timeline, down = figures["timeline"], figures["down_s"]
    assert down is not None, timeline  # the idle worker went within the watch
    assert min(timeline) == 1 + floor and set(timeline[down:]) == {1 + floor}, timeline  # never under min
