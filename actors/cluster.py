"""Start and stop the embedded (local) Ray cluster cleanly.

``ray stop`` leaves ``<temp-dir>/ray_current_cluster`` behind, and a later ``ray.init(num_cpus=...)`` then
tries to join that dead cluster and fails ("When connecting to an existing cluster, num_cpus and num_gpus
must not be provided"). ``address="local"`` always starts a fresh local cluster, whatever that file says.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


def job_cpus() -> int:
    """Logical CPUs of the embedded cluster a train or evaluation job starts: the machine's, but at least 8,
    so the server's, the trainers' and the rollout slots' bundles fit on a 2-core machine, which they
    share."""
    return max(os.cpu_count() or 1, 8)


def init_local_ray(num_cpus: int | None = None, *, dashboard: bool = False, **kwargs: Any) -> dict[str, Any]:
    """Start a new local Ray cluster for this process (or reuse the one this process already started)."""
    import ray

    if ray.is_initialized():
        return {"address": ray.get_runtime_context().gcs_address, "reused": True}
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    context = ray.init(
        address="local",
        num_cpus=num_cpus or os.cpu_count(),
        include_dashboard=dashboard,
        log_to_driver=False,
        configure_logging=False,
        **kwargs,
    )
    return {"address": context.address_info["gcs_address"], "reused": False}


def connect_ray(
    address: str | None = None, *, local_cpus: int | None = None, dashboard: bool = False, **kwargs: Any
) -> dict[str, Any]:
    """Join the cluster a job was submitted to (``ray job submit``), else start the embedded one with
    ``local_cpus`` logical CPUs (a job's bundles may ask for more than the machine's cores; the embedded
    default shares them)."""
    import ray
    import torch  # noqa: F401 - before Ray's client, see below

    # A driver that loads torch only after joining a cluster of several nodes dies in MKL's loader
    # ("Intel oneMKL FATAL ERROR: Cannot load .../libtorch_cpu.so"; seen with Ray 2.60, torch 2.13 CPU);
    # loaded first, it works, and Ray's workers are not affected.
    if ray.is_initialized():  # a job running stages in one process (jobs.smoke: train, then evaluate)
        return {"address": ray.get_runtime_context().gcs_address, "reused": True}
    address = address or os.environ.get("RAY_ADDRESS")
    if address and address != "local":
        ray.init(address=address, **kwargs)
        return {"address": address, "reused": True}
    return init_local_ray(local_cpus, dashboard=dashboard, **kwargs)


def alive_nodes() -> int:
    """Alive nodes of the connected cluster (1 on one machine): above one, a path on the driver's node says
    nothing about what the node an actor lands on holds."""
    import ray

    return sum(1 for node in ray.nodes() if node["Alive"])


@contextlib.contextmanager
def local_ray(num_cpus: int | None = None, **kwargs: Any) -> Iterator[dict[str, Any]]:
    """A local cluster for the duration of a block; shut down afterwards even on error."""
    import ray

    info = init_local_ray(num_cpus, **kwargs)
    try:
        yield info
    finally:
        if not info["reused"]:
            ray.shutdown()
