"""The guard as a Ray Serve deployment: a thin shell over `serve.proxy.GuardProxy`.

`build_app(config)` is the only `serve.deployment` call. Each replica owns one
`httpx.AsyncClient` (explicit connect/read timeouts) and one `GuardProxy`, and serves its
Starlette app through `serve.ingress`. Rollout state lives in the replica, so the deployment
runs one replica (a rollout must reach the replica that opened it); scale by running more
deployments, one per group of rollouts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .proxy import GuardProxy, ProxyConfig, default_client

if TYPE_CHECKING:
    from ray.serve import Application
    from starlette.applications import Starlette


class GuardDeployment:
    """One replica: the proxy core over its own HTTP client."""

    def __init__(self, config: ProxyConfig) -> None:
        self.proxy = GuardProxy(config, default_client())

    def __serve_build_asgi_app__(self) -> Starlette:
        return self.proxy.app()

    def node(self) -> str:
        """The address of the node this replica runs on (for the run's report of what ran where)."""
        import ray

        return ray.util.get_node_ip_address()


def build_app(config: ProxyConfig, **options: Any) -> Application:
    """The bound Ray Serve application (run it with `ray.serve.run(app, route_prefix=...)`)."""
    from ray import serve

    options.setdefault("name", "guard")
    options.setdefault("num_replicas", 1)
    options.setdefault("max_ongoing_requests", 1024)
    deployment = serve.deployment(serve.ingress()(GuardDeployment), **options)
    return deployment.bind(config)
