"""Preflight: what a first training run needs, checked from every node of the cluster, one line a check.

    ray job submit --working-dir . -- python -m jobs.preflight [--config jobs/configs/preflight.yaml] \
        train_config=jobs/configs/train-lfm3-1.7b.yaml storage=s3://bucket/runs/x

On each alive node (a task pinned to it, asking for no CPU, so a ``CPU: 0`` head is checked too): torch
and vLLM import; the GPUs Ray declares for the node are the GPUs torch sees, with the driver's version;
each harness's binary is installed and runs (``--version``) inside the train config's sandbox; the
storage location takes a write, a read-back and a delete. Then the guard: one shard deployed the way the
train config places it (port, proxy), and its ``/health`` reached from every node at the address a rollout
on that node uses. Prints ``ok``/``FAIL``, the node, the check and what was found; the last line is one JSON
object; the exit status is 1 when any check failed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from actors.config_loader import load_config

CONFIGS = Path(__file__).resolve().parent / "configs"
DEFAULT_CONFIG = CONFIGS / "preflight.yaml"
GUARD_SHARD = "preflight"


@dataclass(frozen=True, slots=True)
class PreflightConfig:
    train_config: str = str(CONFIGS / "train-smoke.yaml")
    """The train config to check for: its harnesses, sandbox, guard port and proxy, and storage."""
    storage: str = ""
    """The storage location to check ("": the train config's own ``storage``; none: skipped)."""
    timeout_s: float = 120.0
    """How long one node's checks may take."""


@dataclass(frozen=True, slots=True)
class Check:
    node: str
    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.ok else 'FAIL'} {self.node} {self.name}: {self.detail}"


def gpu_finding(declared: float, visible: int, driver: str) -> tuple[bool, str]:
    """Whether the GPUs Ray declares for a node (``resources: {GPU: n}``) are the GPUs torch sees there.
    A node that declares GPUs torch cannot see would train on the CPU without a word."""
    if declared and visible < declared:
        return False, (
            f"Ray declares {declared:g} GPU(s), torch sees {visible}: the driver ({driver or 'none found'}) "
            "is missing or too old for torch's CUDA build (use an image with driver 580 or newer)"
        )
    if declared:
        return True, f"{visible} GPU(s) visible to torch, driver {driver}"
    return True, f"no GPU declared ({visible} visible)"


def node_checks(harnesses: tuple[str, ...], sandbox: str, storage: str, declared_gpus: float) -> list[Check]:
    """Every check that runs on one node, from that node."""
    from actors.serving.address import node_address

    node = node_address("node")
    checks = []

    def check(name: str, run: Any) -> None:
        try:
            ok, detail = run()
        except Exception as exc:  # a failed check is a finding, never the end of the preflight
            ok, detail = False, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        checks.append(Check(node, name, ok, detail))

    check("gpu", lambda: _gpu(declared_gpus))
    check("vllm", _vllm)
    binaries = {}
    for harness in harnesses:
        check(f"{harness} binary", lambda h=harness: _binary(h, binaries))
    check("sandbox", lambda: _sandbox(sandbox, binaries))
    if storage:
        check("storage", lambda: _storage(storage, node))
    return checks


def _gpu(declared: float) -> tuple[bool, str]:
    import torch

    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    driver = ""
    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split("\n")[0]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return gpu_finding(declared, visible, driver)


def _vllm() -> tuple[bool, str]:
    import vllm

    return True, f"vllm {vllm.__version__} imports"


def _binary(harness: str, found: dict[str, Path]) -> tuple[bool, str]:
    from environments.harnesses.registry import harness_spec

    binary = harness_spec(harness).launcher().binary
    if not binary.exists():
        return False, f"{binary} is missing: run scripts/harness-deps.sh on this node (HA_HARNESSES)"
    found[harness] = binary
    return True, str(binary)


def _sandbox(name: str, binaries: dict[str, Path]) -> tuple[bool, str]:
    """Each installed harness's ``--version`` inside a fresh sandbox of the configured backend."""
    from environments.harnesses import harness_binds
    from environments.sandboxes import SandboxLimits, backend_named

    with tempfile.TemporaryDirectory(prefix="preflight-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        backend = backend_named(name, Path(tmp) / "boxes", prefix="hxpf", extra_ro_binds=harness_binds())
        box = backend.create(workspace, SandboxLimits())
        try:
            ran = box.run("echo sandbox-ok", timeout_s=60)
            if not ran.ok or "sandbox-ok" not in ran.output_tail:
                return False, f"a command did not run in the {name} sandbox: {_last(ran.output_tail)}"
            versions = []
            for harness, binary in binaries.items():
                result = box.run(f"{binary} --version", timeout_s=120)
                if not result.ok:
                    return (
                        False,
                        f"{harness} --version failed in the {name} sandbox: {_last(result.output_tail)}",
                    )
                versions.append(f"{harness} {_last(result.output_tail)[:40]}")
        finally:
            box.destroy()
    return True, f"{name} sandbox runs " + (", ".join(versions) or "commands")


def _last(output: str) -> str:
    lines = output.strip().splitlines()
    return lines[-1][:200] if lines else "no output"


def _storage(location: str, node: str) -> tuple[bool, str]:
    from actors.storage import open_storage

    storage = open_storage(location)
    path = storage.path("preflight", f"{node}-{time.time_ns()}.txt")
    storage.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
    payload = f"written from {node}".encode()
    with storage.fs.open_output_stream(path) as out:
        out.write(payload)
    with storage.fs.open_input_stream(path) as back:
        same = back.read() == payload
    storage.fs.delete_file(path)
    return same, f"{location}: write, read back and delete" + ("" if same else " (read back other bytes)")


def guard_reached(url: str) -> tuple[bool, str]:
    """GET ``url/health`` from here."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/health", timeout=10) as response:
            return response.status == 200, f"{url}/health answered {response.status}"
    except OSError as exc:
        return (
            False,
            f"{url}/health unreachable ({exc}): the guard's proxy does not answer from this node",
        )


def run(cfg: PreflightConfig) -> dict:
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from actors.cluster import connect_ray, job_cpus
    from jobs.smoke import locate
    from jobs.stack import guard_app, stop_serve
    from jobs.train import TrainJobConfig

    train = load_config(TrainJobConfig, locate(cfg.train_config))
    storage = cfg.storage or train.storage
    connect_ray(local_cpus=job_cpus())
    nodes = [n for n in ray.nodes() if n["Alive"]]

    def pinned(node: dict) -> dict:
        strategy = NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        return {"num_cpus": 0, "scheduling_strategy": strategy}

    on_node = ray.remote(node_checks)
    pending = [
        on_node.options(**pinned(n)).remote(
            tuple(train.harnesses), train.rollouts.sandbox, storage, n["Resources"].get("GPU", 0)
        )
        for n in nodes
    ]
    checks: list[Check] = []
    for node, ref in zip(nodes, pending, strict=True):
        try:
            checks += ray.get(ref, timeout=cfg.timeout_s)
        except Exception as exc:
            address = node.get("NodeManagerAddress", node["NodeID"][:8])
            checks.append(Check(address, "node", False, f"its checks did not finish: {type(exc).__name__}"))
    try:
        url = guard_app(
            "http://127.0.0.1:9/v1",
            replace(train.guard, mode="enforce", min_replicas=1, max_replicas=1),
            GUARD_SHARD,
        )
        reach = ray.remote(guard_reached)
        answers = ray.get([reach.options(**pinned(n)).remote(url) for n in nodes], timeout=cfg.timeout_s)
        for node, (ok, detail) in zip(nodes, answers, strict=True):
            checks.append(Check(node["NodeManagerAddress"], "guard", ok, detail))
    finally:
        stop_serve()
    for c in checks:
        print(c.line(), flush=True)
    failed = [c for c in checks if not c.ok]
    return {"nodes": len(nodes), "checks": len(checks), "failed": [asdict(c) for c in failed]}


def main(argv: list[str] | None = None) -> None:
    import argparse

    from environments.errors import user_errors

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error you can fix")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the config")
    args = parser.parse_args(argv)
    with user_errors(args.debug):  # a bad config value, or one found while checking: one line
        cfg = load_config(PreflightConfig, args.config, tuple(args.overrides))
        figures = run(cfg)
    print(json.dumps(figures), flush=True)
    sys.exit(1 if figures["failed"] else 0)


if __name__ == "__main__":
    main()
