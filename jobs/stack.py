"""What the train and evaluation jobs both stand on: one serving actor and the guard in front of it.

One placement group holds the serving bundle (its GPU on GPU machines) and the caller's extra bundles
(the trainers'); the guard runs as a Ray Serve application (a proxy on every node, so ``127.0.0.1:<port>``
reaches it from any rollout actor). Everything is stopped and removed on exit, in reverse order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class Stack:
    server: Any
    """The serving actor's handle."""
    url: str
    """The serving actor's OpenAI URL (``.../v1``)."""
    guard_url: str
    group: Any
    """The placement group: bundle 0 is the server's, then the extra bundles in order."""
    device: str


def guard_app(upstream_url: str, port: int, guard: str = "enforce") -> str:
    """(Re)deploy the guard as the Serve application ``guard`` in front of ``upstream_url``; its URL.
    ``guard`` is the mode (``enforce``, ``monitor`` or ``off``: ``serve.mode.GuardMode``)."""
    from ray import serve

    from serve.app import build_app
    from serve.proxy import ProxyConfig

    serve.start(http_options={"host": "127.0.0.1", "port": port})
    serve.run(
        build_app(ProxyConfig(upstream_url, guard=guard), ray_actor_options={"num_cpus": 0}),
        name="guard",
        route_prefix="/",
    )
    return f"http://127.0.0.1:{port}"


@contextmanager
def serving_stack(
    serving_cfg: Any,
    work_dir: Path,
    guard_port: int,
    extra_bundles: Sequence[dict[str, float]] = (),
    say: Any = print,
    guard: str = "enforce",
) -> Iterator[Stack]:
    import ray
    import torch
    from ray import serve
    from ray.util.placement_group import placement_group, remove_placement_group

    from actors.placement import serving_bundle, start_serving
    from actors.serving.config import resolve_device

    device = resolve_device(serving_cfg.device, torch.cuda.is_available())
    group = placement_group([serving_bundle(device), *extra_bundles])
    ray.get(group.ready(), timeout=300)
    server = None
    try:
        say(f"placement group ready; starting the serving actor (vLLM on {device})")
        server = start_serving(serving_cfg, device=device, placement_group=group, work_dir=str(work_dir))
        url = ray.get(server.url.remote())
        say(f"serving at {url}; starting the guard (Ray Serve, {guard}) on port {guard_port}")
        yield Stack(server, url, guard_app(url, guard_port, guard), group, device)
    finally:
        serve.shutdown()
        if server is not None:
            ray.get(server.stop.remote())
            ray.kill(server)
        remove_placement_group(group)
