"""The guard as a Ray Serve deployment: a thin shell over `serve.proxy.GuardProxy`.

`build_app(config)` is the only `serve.deployment` call. Each replica owns one `httpx.AsyncClient`
(explicit connect/read timeouts) and one `GuardProxy`, and serves its Starlette app through
`serve.ingress`; every response names its replica (`x-guard-replica`). With one replica the open
rollouts live in it. With several (a fixed number, or Serve autoscaling between a minimum and a
maximum) they share one `serve.book.RolloutLedger` actor, so any replica serves any request of any
rollout and a rollout's record is whole whichever replicas served it (`serve/book.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .proxy import GuardProxy, ProxyConfig, default_client
from .settings import replicas_problem

if TYPE_CHECKING:
    from ray.serve import Application
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

REPLICA_HEADER = "x-guard-replica"
NODE_HEADER = "x-guard-node"


class _NameReplica:
    """ASGI middleware: each HTTP response carries the replica that served it and its node's address (what
    a job reports of where its guard ran, asked over HTTP: a Serve handle in the driver would leave a
    long poll open on the controller, which Ray reports as a failed task when Serve shuts down)."""

    def __init__(self, app: ASGIApp, replica: str, node: str) -> None:
        self.app = app
        self.headers = [(REPLICA_HEADER.encode(), replica.encode()), (NODE_HEADER.encode(), node.encode())]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def named(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        await self.app(scope, receive, named)


class GuardDeployment:
    """One replica: the proxy core over its own HTTP client, and the shared ledger when there is one."""

    def __init__(self, config: ProxyConfig, ledger: Any = None) -> None:
        from .book import LedgerBook

        self.proxy = GuardProxy(config, default_client(), book=LedgerBook(ledger) if ledger else None)
        if ledger is not None:
            import ray

            ray.get(ledger.join.remote(self.replica(), self.node()))  # before Serve counts it running

    def __serve_build_asgi_app__(self) -> Starlette:
        app = self.proxy.app()
        app.add_middleware(_NameReplica, replica=self.replica(), node=self.node())
        return app

    @staticmethod
    def replica() -> str:
        from ray import serve

        try:
            return serve.get_replica_context().replica_id.unique_id
        except Exception:  # noqa: BLE001 - outside a replica (tests of the app alone)
            return "local"

    def node(self) -> str:
        """The address of the node this replica runs on (for the run's report of what ran where)."""
        import ray

        return ray.util.get_node_ip_address()


def autoscaling(min_replicas: int, max_replicas: int, target_ongoing: int = 32) -> dict[str, Any]:
    """Serve's replica options for a guard of ``min_replicas`` .. ``max_replicas`` replicas. A replica
    mostly waits on the model server (a streamed turn is one ongoing request for its whole generation),
    so the target of ongoing requests per replica is high."""
    if problem := replicas_problem(min_replicas, max_replicas):
        raise ValueError(problem)
    if min_replicas == max_replicas:
        return {"num_replicas": min_replicas}
    return {
        "autoscaling_config": {
            "min_replicas": min_replicas,
            "max_replicas": max_replicas,
            "target_ongoing_requests": target_ongoing,
        }
    }


def start_ledger(config: ProxyConfig, name: str | None = None) -> Any:
    """The ledger actor several replicas share (no CPU reserved: it does bookkeeping only)."""
    from actors.placement import make_actor

    from .book import RolloutLedger

    return make_actor(RolloutLedger, config.max_rollouts, config.guard.value, resources={"CPU": 0}, name=name)


def build_app(config: ProxyConfig, ledger: Any = None, **options: Any) -> Application:
    """The bound Ray Serve application (run it with `ray.serve.run(app, route_prefix=...)`). More than
    one replica (``num_replicas`` or ``autoscaling_config``) needs the ``ledger`` they share."""
    from ray import serve

    options.setdefault("name", "guard")
    if "autoscaling_config" not in options:
        options.setdefault("num_replicas", 1)
    if ledger is None and (options.get("num_replicas", 1) != 1 or "autoscaling_config" in options):
        raise ValueError("a guard of several replicas needs a ledger they share: pass start_ledger(config)")
    options.setdefault("max_ongoing_requests", 1024)
    deployment = serve.deployment(serve.ingress()(GuardDeployment), **options)
    return deployment.bind(config, ledger)
