"""Where actors and tasks run: pure resource math, and the one place that hands code to ``ray.remote``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ray.actor import ActorHandle
    from ray.util.placement_group import PlacementGroup


def serving_bundle(device: Literal["cpu", "gpu"], cpus: float = 1.0, gpus: float = 1.0) -> dict[str, float]:
    """The placement-group bundle the serving actor needs: its CPU share, plus on GPU machines its share
    of a GPU (the callers pass vLLM's ``gpu_memory_utilization``, so the rest of that GPU stays free for a
    trainer; 1: a whole GPU)."""
    if cpus <= 0 or (device == "gpu" and gpus <= 0):
        raise ValueError(
            f"serving bundle needs cpus > 0 and, on GPU, gpus > 0 (got cpus={cpus}, gpus={gpus})"
        )
    return {"CPU": cpus, "GPU": gpus} if device == "gpu" else {"CPU": cpus}


def make_actor(
    cls: type,
    *args: Any,
    resources: dict[str, float],
    name: str | None = None,
    placement_group: PlacementGroup | None = None,
    bundle_index: int = 0,
    max_concurrency: int = 1,
    node_id: str | None = None,
    **kwargs: Any,
) -> ActorHandle:
    """Create a Ray actor from a plain class (with ``submit_task``, the only ``ray.remote`` site): in a
    placement group's bundle, or on the node ``node_id`` (what it reads was written there), or anywhere."""
    import ray
    from ray.util.scheduling_strategies import (
        NodeAffinitySchedulingStrategy,
        PlacementGroupSchedulingStrategy,
    )

    options: dict[str, Any] = {
        "num_cpus": resources.get("CPU", 0),
        "num_gpus": resources.get("GPU", 0),
        "max_concurrency": max_concurrency,
    }
    if name:
        options["name"] = name
    if placement_group is not None:
        options["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
            placement_group=placement_group, placement_group_bundle_index=bundle_index
        )
    elif node_id is not None:
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
    return ray.remote(cls).options(**options).remote(*args, **kwargs)


def submit_task(fn: Any, *args: Any, resources: dict[str, float], **kwargs: Any) -> Any:
    """Run the plain function ``fn`` as a Ray task with ``resources``; returns its ``ObjectRef``."""
    import ray

    options = {"num_cpus": resources.get("CPU", 0), "num_gpus": resources.get("GPU", 0)}
    return ray.remote(fn).options(**options).remote(*args, **kwargs)


def first_failure_raises(
    refs: list[Any], between: Callable[[], None] | None = None, every_s: float = 5.0
) -> list[Any]:
    """``ray.get(refs)``, except that the first task or actor call to fail raises at once (a trainer rank
    that died leaves the others waiting in a collective: the caller's clean-up must not wait with them).
    With ``between``, it is called at least every ``every_s`` seconds while waiting, and once more at the
    end (the train job prints its trainers' progress there)."""
    import ray

    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1, timeout=every_s if between else None)
        if between is not None:
            between()
        ray.get(done)
    return ray.get(list(refs))


def start_serving(
    cfg: Any,
    *,
    device: Literal["cpu", "gpu"],
    name: str | None = None,
    placement_group: PlacementGroup | None = None,
    bundle_index: int = 0,
    work_dir: str | None = None,
    node_id: str | None = None,
) -> ActorHandle:
    """Start the serving actor (a threaded VLLMServer) and wait until its server answers."""
    import ray

    from actors.serving.server import VLLMServer

    # The vLLM process is a child of the actor and brings its own threads; the actor itself is I/O.
    handle = make_actor(
        VLLMServer,
        cfg,
        work_dir,
        resources=serving_bundle(device, gpus=cfg.gpu_memory_utilization),
        name=name,
        placement_group=placement_group,
        bundle_index=bundle_index,
        max_concurrency=16,
        node_id=node_id,
    )
    ray.get(handle.start.remote())
    return handle
