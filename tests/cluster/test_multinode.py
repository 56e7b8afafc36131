"""The train smoke on a Ray cluster of three nodes on this machine, with nothing in common but the network and
a storage location: a head (127.0.0.2) and two workers (127.0.0.3, 127.0.0.4), each in a mount namespace of
its own with a private tmpfs over the run's artifact folder, so a path one node writes is absent on every
other (``tests.raynodes``). ``ray job submit`` runs ``jobs.smoke`` (one harness) on the head.

Asserted: the serving actor and the trainer ran on different nodes (``placement=STRICT_SPREAD``); the
trainer's guard shard (two to three Serve replicas over one ledger actor, spread over the nodes, one proxy
at the head's address: ``guard_proxy=head_only``) reached the server at its node's address; every adapter
version travelled trainer -> server as bytes (no shared disk: the trainer's checkpoint folders exist only on
its node); checkpoints, trajectories and ``train.json`` reached the storage location, from which the
evaluation copied the checkpoints and served them all through multi-LoRA; its report went to storage too.
Nothing of the run is left on this host's view of the artifact folder.

A slow tier outside CI (``-m cluster``; see docs/testing.md): it needs root for the mount namespaces.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.environments.harnesses.conftest import harnesses_missing
from tests.raynodes import BIN, free_ports, ray_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.vllm, pytest.mark.harness, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HEAD, WORKERS = "127.0.0.2", ("127.0.0.3", "127.0.0.4")


def job_summary(stdout: str) -> dict:
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])


def test_the_train_smoke_runs_across_three_nodes_with_no_disk_in_common(tiny_agent: Path, tmp_path: Path):
    from environments.harnesses.base import install_root

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.fail(harnesses_missing() or "bubblewrap is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    artifacts = tmp_path / "artifacts"  # private per node
    artifacts.mkdir()
    bucket = tmp_path / "bucket"  # the storage location every node reaches (a bucket on a cluster)
    storage = f"file://{bucket}"
    runtime_env = {
        "env_vars": {
            "HARNESS_ADAPTERS_CACHE": os.environ["HARNESS_ADAPTERS_CACHE"],
            "HA_HARNESSES": str(install_root()),
            "HF_HUB_OFFLINE": "1",
            "TRL_EXPERIMENTAL_SILENCE": "1",
        }
    }
    port = free_ports(1, HEAD)[0]
    placement = [
        f"guard.port={port}",
        "guard.proxy=head_only",
        "guard.min_replicas=2",
        "guard.max_replicas=3",
    ]
    train = [*placement, "harnesses=[pi]", "serving.placement=STRICT_SPREAD", f"storage={storage}/train"]
    evaluate = [*placement, "harnesses=[pi]", f"train_dir={storage}/train", f"storage={storage}/eval"]
    evaluate += ["merged.tasks=0", "tasks.max_tasks=2"]
    overrides = [
        f"out_dir={artifacts / 'smoke'}",
        f"train_overrides={json.dumps(train)}",
        f"eval_overrides={json.dumps(evaluate)}",
    ]
    with ray_cluster(env, tmp_path / "ray", WORKERS, head_ip=HEAD, cpus=4, private=artifacts) as cluster:
        submit = [str(BIN / "ray"), "job", "submit", f"--address={cluster.jobs}", "--working-dir", str(REPO)]
        submit += ["--runtime-env-json", json.dumps(runtime_env), "--", "python", "-m", "jobs.smoke"]
        submit += ["--config", "jobs/configs/smoke-three.yaml"]  # two steps, a checkpoint each (pi only here)
        job = subprocess.run(
            [*submit, *overrides], env=env, cwd=REPO, capture_output=True, text=True, timeout=2400
        )
    log = job.stdout + job.stderr
    assert job.returncode == 0, log[-8000:]
    print("\n".join(line for line in job.stdout.splitlines() if line.startswith(("[smoke", "[train]"))))
    summary = job_summary(job.stdout)
    print(json.dumps({k: summary.get(k) for k in ("train", "evaluate", "total_s")}, default=str))

    trained = json.loads((bucket / "train" / "train.json").read_text())["pi"]
    steps = trained["steps"]
    assert steps == 2, trained["log_history"][-1:]
    nodes = summary["train"]["nodes"]
    assert nodes["serving"] in (HEAD, *WORKERS) and nodes["pi"] in (HEAD, *WORKERS)
    assert nodes["serving"] != nodes["pi"], nodes  # STRICT_SPREAD: the trainer is not beside the server
    guard_nodes = summary["train"]["guard_nodes"]["pi"]  # pi's shard: two replicas over one ledger
    assert len(guard_nodes) >= 2 and set(guard_nodes) <= {HEAD, *WORKERS}, guard_nodes
    assert len(set(guard_nodes)) >= 2, guard_nodes  # Serve spreads replicas over the nodes
    transfers = trained["adapter_transfers"]
    assert [name for name, _, _ in transfers] == trained["published"], transfers
    assert all(size > 0 and seconds > 0 for _, size, seconds in transfers)

    for step in range(1, steps + 1):
        folder = bucket / "train" / "pi" / f"checkpoint-{step}"
        assert (folder / "adapter_model.safetensors").is_file() and (folder / "README.md").is_file()
        assert "revision" in (folder / "README.md").read_text()
    assert list((bucket / "train" / "pi" / "trajectories").glob("*.json")), "no trajectory reached storage"

    results = json.loads((bucket / "eval" / "results.json").read_text())
    assert {c["checkpoint"] for c in results["cells"]} == {"base", "pi-step1", "pi-step2"}
    assert not results["load_failures"]
    assert summary["evaluate"]["serving_node"] in (HEAD, *WORKERS)
    assert (bucket / "eval" / "report.md").is_file()
    assert list((bucket / "eval" / "trajectories" / "pi").glob("*.json")), (
        "no evaluation trajectory in storage"
    )
    assert not any(artifacts.iterdir()), "a node wrote through to the host's artifact folder"
