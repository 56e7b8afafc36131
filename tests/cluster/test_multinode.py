"""The train smoke on a Ray cluster of three nodes on this machine that share what real nodes share (the
network, a storage location, the same installed software) and nothing else: a head (127.0.0.2, ``CPU: 0``
as in cluster.yaml) and two workers (127.0.0.3, 127.0.0.4), each in a mount namespace of its own with a
private ``/tmp`` and ``/var/tmp``, home (with its Hugging Face cache) and model and task cache
(``tests.raynodes``), each run as a non-root user, as Ray's container runs them (so the sandboxes have no
writable cgroups). The head's
cache starts with the tiny agent built (the driver's node built it); the workers' caches start empty.
``ray job submit`` runs ``jobs.smoke`` (one harness) on the head, with the presets' default guard proxy.

Asserted: the serving actor and the trainer ran on different workers (``placement=STRICT_SPREAD``, nothing
on the head); the trainer's guard shard (two to three Serve replicas over one ledger actor, one proxy at
the head's address, which ``guard.proxy: auto`` picks on a cluster) reached the server at its node's
address; the model the driver's node built reached the workers through storage; every adapter
version travelled trainer -> server as bytes (no shared disk: the trainer's checkpoint folders exist only on
its node); checkpoints, trajectories and ``train.json`` reached the storage location, from which the
evaluation copied the checkpoints and served them all through multi-LoRA; its report went to storage too.
Nothing of the run is left in this host's view of the nodes' private folders.

A slow tier outside CI (``-m cluster``; see docs/testing.md): it needs root for the mount namespaces.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.environments.harnesses.conftest import harnesses_missing
from tests.raynodes import BIN, NodeDisk, free_ports, ray_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.vllm, pytest.mark.harness, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HEAD, WORKERS = "127.0.0.2", ("127.0.0.3", "127.0.0.4")
NODE_UID = 1000  # the ray user of Ray's container image


def job_summary(stdout: str) -> dict:
    return json.loads([line for line in stdout.splitlines() if line.startswith("{")][-1])


@pytest.fixture
def machine() -> Path:
    """A folder outside ``/tmp`` and ``/var/tmp`` (which every node makes private): the storage location, the
    nodes' homes and caches (private per node too) and the head's provisioned files. Other users may pass
    through it."""
    root = Path(tempfile.mkdtemp(prefix="multinode", dir="/srv"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_the_train_smoke_runs_across_three_nodes_that_share_nothing_but_storage(
    tiny_agent: Path, tmp_path: Path, machine: Path
):
    from environments.harnesses.base import install_root

    if shutil.which("bwrap") is None or harnesses_missing():
        pytest.fail(harnesses_missing() or "bubblewrap is not installed")
    home, cache, bucket = machine / "home", machine / "cache", machine / "bucket"
    bucket.mkdir(mode=0o777)  # the storage location every node reaches (a bucket on a cluster)
    bucket.chmod(0o777)
    provisioned = machine / "head-cache"  # the tiny agent, built on the driver's node before the job
    for built in (tiny_agent.parent).glob("tiny*"):
        shutil.copytree(built, provisioned / "models" / built.name, symlinks=True)
    installs = (Path(sys.base_prefix), install_root(), REPO)
    private = (Path("/tmp"), Path("/var/tmp"), home, cache)
    head_disk = NodeDisk(private=private, seeds=((provisioned, cache),), uid=NODE_UID, installs=installs)
    worker_disk = NodeDisk(private=private, uid=NODE_UID, installs=installs)

    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_ADDRESS", "RAY_AUTH", "HF_"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env |= {"HOME": str(home), "HARNESS_ADAPTERS_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    env |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    artifacts = tmp_path / "artifacts"  # in each node's private /tmp
    artifacts.mkdir()
    storage = f"file://{bucket}"
    runtime_env = {
        "env_vars": {
            "HARNESS_ADAPTERS_CACHE": str(cache),
            "HA_HARNESSES": str(install_root()),
            "HF_HUB_OFFLINE": "1",
            "TRL_EXPERIMENTAL_SILENCE": "1",
        }
    }
    port = free_ports(1, HEAD)[0]
    placement = [f"guard.port={port}", "guard.min_replicas=2", "guard.max_replicas=3"]
    train = [*placement, "harnesses=[pi]", "serving.placement=STRICT_SPREAD", f"storage={storage}/train"]
    evaluate = [*placement, "harnesses=[pi]", f"train_dir={storage}/train", f"storage={storage}/eval"]
    evaluate += ["merged.tasks=0", "tasks.max_tasks=2"]
    overrides = [
        f"out_dir={artifacts / 'smoke'}",
        f"train_overrides={json.dumps(train)}",
        f"eval_overrides={json.dumps(evaluate)}",
    ]
    nodes = dict(head_ip=HEAD, cpus=6, head_cpus=0, head_disk=head_disk, worker_disk=worker_disk)
    with ray_cluster(env, tmp_path / "ray", WORKERS, **nodes) as cluster:
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
    assert nodes["serving"] in WORKERS and nodes["pi"] in WORKERS, nodes  # the head has no CPU
    assert nodes["serving"] != nodes["pi"], nodes  # STRICT_SPREAD: the trainer is not beside the server
    guard_nodes = summary["train"]["guard_nodes"]["pi"]  # pi's shard: two replicas over one ledger
    assert len(guard_nodes) >= 2 and set(guard_nodes) <= {HEAD, *WORKERS}, guard_nodes  # Serve spreads them
    # best-effort only: beside a CPU: 0 head both replicas often share a worker
    transfers = trained["adapter_transfers"]
    assert [name for name, _, _ in transfers] == trained["published"], transfers
    assert all(size > 0 and seconds > 0 for _, size, seconds in transfers)
    assert list((bucket / "train" / "models").iterdir()), "the driver's model did not go through storage"

    for step in range(1, steps + 1):
        folder = bucket / "train" / "pi" / f"checkpoint-{step}"
        assert (folder / "adapter_model.safetensors").is_file() and (folder / "README.md").is_file()
        assert "revision" in (folder / "README.md").read_text()
    assert list((bucket / "train" / "pi" / "trajectories").glob("*.json")), "no trajectory reached storage"

    results = json.loads((bucket / "eval" / "results.json").read_text())
    assert {c["checkpoint"] for c in results["cells"]} == {"base", "pi-step1", "pi-step2"}
    assert not results["load_failures"]
    assert summary["evaluate"]["serving_node"] in WORKERS
    assert (bucket / "eval" / "report.md").is_file()
    assert list((bucket / "eval" / "trajectories" / "pi").glob("*.json")), (
        "no evaluation trajectory in storage"
    )
    for folder in (artifacts, home, cache):
        assert not any(folder.iterdir()), f"a node wrote through to the host's {folder}"
