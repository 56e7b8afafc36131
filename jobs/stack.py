"""What the train and evaluation jobs both stand on: one serving actor and the guard in front of it.

One placement group, with an explicit strategy, holds the serving bundle (its GPU on GPU machines) and the
caller's extra bundles (the trainers'). The server binds its node's address and advertises it, so the
guard and trainers on other nodes reach it. The guard runs as a Ray Serve application whose replicas go to
any node: with ``proxy=every_node`` (one node) a Serve proxy answers at ``127.0.0.1:<port>``; with
``head_only`` one proxy answers at the head node's address, reached from every node; ``auto`` picks the
first on one node and the second on a cluster (Serve starts proxies only where replicas run).
Everything is stopped and removed on exit, in reverse order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from serve.settings import GuardSettings


@dataclass(frozen=True, slots=True)
class Stack:
    server: Any
    """The serving actor's handle."""
    url: str
    """The serving actor's OpenAI URL (``.../v1``)."""
    guard_urls: dict[str, str]
    """Each guard shard's base URL (``http://host:port/<shard>``), by shard (a trainer's harness)."""
    group: Any
    """The placement group: bundle 0 is the server's, then the extra bundles in order."""
    device: str
    node: str = ""
    """The address of the node the server runs on."""
    guard_nodes: dict[str, list[str]] = field(default_factory=dict)
    """The nodes each guard shard's replicas run on."""
    model: str = ""
    """Where the server loaded its weights from, for every other process that loads them (the trainers):
    the serving config's ``model``, or on a cluster its copy in storage (``model_for_nodes``)."""

    def guard_url(self, shard: str) -> str:
        return self.guard_urls[shard]


def guard_app(
    upstream_url: str,
    guard: GuardSettings,
    shard: str = "guard",
    forwarding: Forwarding | None = None,
) -> str:
    """(Re)deploy one guard shard, the Serve application ``guard-<shard>`` at route ``/<shard>``, in front of
    ``upstream_url``; its base URL. ``guard`` gives the mode, the port, where the HTTP proxy listens (see
    the module docstring) and the replicas (a fixed number; or a range, whose replicas share the ledger
    actor ``guard-ledger-<shard>``, kept across redeploys of the shard); ``forwarding`` how it forwards a
    session's turns (``Forwarding``; None: as the harness sent them)."""
    import ray
    from ray import serve
    from ray.serve.config import ProxyLocation

    from actors.serving.address import node_address
    from serve.app import autoscaling, build_app, start_ledger
    from serve.proxy import ProxyConfig
    from serve.record import MAX_TURNS

    proxy = resolve_proxy(guard.proxy, sum(1 for node in ray.nodes() if node["Alive"]))
    port = guard.port
    if proxy == "head_only":  # the driver runs on the head node (``ray job submit`` puts it there)
        host = node_address("node")
        serve.start(proxy_location=ProxyLocation.HeadOnly, http_options={"host": host, "port": port})
    else:
        host = "127.0.0.1"
        serve.start(proxy_location=ProxyLocation.EveryNode, http_options={"host": host, "port": port})
    forwarding = forwarding or Forwarding()
    config = ProxyConfig(
        upstream_url,
        guard=guard.mode,
        temperature=forwarding.temperature,
        tool_grammar=forwarding.tool_grammar,
        max_turns=forwarding.max_turns or MAX_TURNS,
    )
    ledger = None
    if guard.max_replicas > 1:
        try:
            ledger = ray.get_actor(ledger_name(shard))
        except ValueError:
            ledger = start_ledger(config, ledger_name(shard))
    options = autoscaling(*guard.replicas)
    serve.run(
        build_app(config, ledger, ray_actor_options={"num_cpus": 0}, **options),
        name=f"guard-{shard}",
        route_prefix=f"/{shard}",
    )
    return f"http://{host}:{port}/{shard}"


def resolve_proxy(setting: str, nodes: int) -> str:
    """Where the guard's proxy runs on a cluster of ``nodes``: ``auto`` is ``every_node`` on one node and
    ``head_only`` on several. ``every_node`` on several is refused: Ray Serve starts proxies only on the
    head and on nodes that host a replica, so a rollout on any other node would find nothing at
    127.0.0.1."""
    if setting == "auto":
        return "every_node" if nodes <= 1 else "head_only"
    if setting == "every_node" and nodes > 1:
        raise ValueError(
            f"guard.proxy=every_node on a cluster of {nodes} nodes: Ray Serve runs a proxy only where a "
            "guard replica runs (and on the head), so rollouts on other nodes would reach none; set "
            "guard.proxy=auto or head_only"
        )
    return setting


def ledger_name(shard: str) -> str:
    return f"guard-ledger-{shard}"


def replica_nodes(urls: dict[str, str]) -> dict[str, list[str]]:
    """The node address of each shard's replicas, by shard (``urls``: each shard's base URL): those that
    joined its ledger, else its one replica's (the node header of its answer over HTTP)."""
    import httpx
    import ray

    from serve.app import NODE_HEADER

    nodes = {}
    for shard, url in urls.items():
        try:
            ledger = ray.get_actor(ledger_name(shard))
        except ValueError:
            nodes[shard] = [httpx.get(f"{url}/health", timeout=30).headers[NODE_HEADER]]
        else:
            nodes[shard] = sorted(ray.get(ledger.members.remote()).values())
    return nodes


def stop_serve(timeout_s: float = 30.0) -> None:
    """Shut Ray Serve down (its applications, proxies and controller) without the raylet's "Task
    ServeController.graceful_shutdown failed ... killed by ray.kill" lines: ``serve.shutdown`` waits on a
    call the controller ends by killing itself, which Ray reports as a failed task. Here the controller is
    told to shut down without a call left waiting, and its end is watched by name. Falls back to
    ``serve.shutdown`` where Serve's client is not as expected (another Ray version)."""
    import ray
    from ray import serve

    try:
        from ray.serve._private.constants import SERVE_CONTROLLER_NAME, SERVE_NAMESPACE
        from ray.serve.context import _get_global_client, _set_global_client

        client = _get_global_client()
        client.shutdown_cached_handles()
        ray.get(client._controller.graceful_shutdown.remote(False), timeout=timeout_s)
    except Exception:  # noqa: BLE001 - no Serve running, or a client of another shape
        serve.shutdown()
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ray.get_actor(SERVE_CONTROLLER_NAME, namespace=SERVE_NAMESPACE)
        except ValueError:
            break
        time.sleep(0.2)
    client._shutdown = True
    _set_global_client(None)


@contextmanager
def serving_stack(
    serving_cfg: Any,
    work_dir: Path,
    guard: GuardSettings,
    extra_bundles: Sequence[dict[str, float]] = (),
    say: Any = print,
    strategy: str = "PACK",
    shards: Sequence[str] = ("guard",),
    forwarding: Forwarding | None = None,
) -> Iterator[Stack]:
    """Serving and the guard; one guard shard per entry of ``shards`` (a trainer's rollouts stay in one
    shard's replica; shards spread over the nodes)."""
    import ray
    import torch
    from ray.util.placement_group import placement_group, remove_placement_group

    from actors.placement import serving_bundle, start_serving
    from actors.serving.config import resolve_device

    device = resolve_device(serving_cfg.device, torch.cuda.is_available())
    serving = serving_bundle(device, gpus=serving_cfg.gpu_memory_utilization)  # its share, not a whole GPU
    group = placement_group([serving, *extra_bundles], strategy=strategy)
    ray.get(group.ready(), timeout=300)
    server = None
    try:
        say(
            f"placement group ready; starting vLLM ({serving_cfg.model} on {device}): silent until ready, "
            f"often a minute or more (its log in {work_dir} on the serving node)"
        )
        vllm_started = time.monotonic()
        server = start_serving(serving_cfg, device=device, placement_group=group, work_dir=str(work_dir))
        url, node = ray.get([server.url.remote(), server.node.remote()])
        ready_s = time.monotonic() - vllm_started
        say(f"vLLM ready: {serving_cfg.model} at {url} in {ready_s:.0f} s (node {node})")
        say(f"starting the guard (Ray Serve, {guard.mode}) on port {guard.port}")
        urls = {shard: guard_app(url, guard, shard, forwarding) for shard in shards}
        guard_nodes = replica_nodes(urls)
        say(f"guard shards at {', '.join(urls.values())} (replicas on {guard_nodes})")
        yield Stack(server, url, urls, group, device, node, guard_nodes, serving_cfg.model)
    finally:
        stop_serve()
        for shard in shards:
            try:
                ray.kill(ray.get_actor(ledger_name(shard)))
            except ValueError:
                pass  # one replica per shard: no ledger
        if server is not None:
            ray.get(server.stop.remote())
            ray.kill(server)
        remove_placement_group(group)


def job_stack(
    cfg: Any,
    serving_cfg: Any,
    work_dir: Path,
    bundles: Sequence[dict[str, float]],
    say: Any,
    given: Stack | None = None,
) -> Any:
    """``serving_stack`` as a train or evaluation job config asks for it (its ``guard`` section,
    ``serving.placement``, its ``rollouts`` forwarding, and one guard shard per entry of ``harnesses``); or,
    when another job ``given`` its stack, that stack, left running on exit."""
    if given is not None:
        return nullcontext(given)
    from actors.cluster import alive_nodes

    return serving_stack(
        model_for_nodes(serving_cfg, alive_nodes(), cfg.storage, say),
        work_dir,
        cfg.guard,
        bundles,
        say,
        strategy=cfg.serving.placement,
        shards=cfg.harnesses,
        forwarding=forwarding(cfg.rollouts, serving_cfg.tool_call_parser),
    )


@dataclass(frozen=True)
class Forwarding:
    """How the guard forwards a job's session turns (``serve.proxy.ProxyConfig``'s fields so named)."""

    temperature: float | None = None
    """Every turn's sampling temperature (None: the harness's request as sent)."""
    tool_grammar: str | None = None
    """The server's tool-call parser when tool calls are constrained (``serve.grammar``); None: free."""
    max_turns: int = 0
    """Model turns per session (0: the guard's own bound)."""


def forwarding(rollouts: Any, parser: str) -> Forwarding:
    """A job's ``rollouts`` section as the guard applies it, for a server with tool-call ``parser``."""
    return Forwarding(rollouts.temperature, tool_grammar(rollouts, parser), rollouts.max_turns)


def tool_grammar(rollouts: Any, parser: str) -> str | None:
    """The parser whose format the guard constrains tool calls in, when ``rollouts`` asks for it; refused
    (``ValueError``, naming the fix) for a parser the guard writes no grammar for."""
    from serve.grammar import tool_grammar_problem

    if not rollouts.constrain_tool_calls:
        return None
    if problem := tool_grammar_problem(parser):
        raise ValueError(problem)
    return parser


def model_problem(nodes: int, model: str, storage: str) -> str | None:
    """Why serving must not start: on a cluster, a model folder on the driver's node reaches the nodes that
    load it (the server's, the trainers') only through storage, and none is set; else None."""
    if nodes > 1 and not storage and model_folder(model):
        return (
            f"serving model {model!r} is a folder on this node, on a cluster of {nodes} nodes: the server "
            "and trainers may run elsewhere; set storage: s3://<bucket>/<run> (the folder is copied there) "
            "or serve a Hub id"
        )
    return None


def model_folder(model: str) -> bool:
    """Whether ``model`` is a folder on this node (not a Hub id, not a storage URI)."""
    from actors.serving.weights import is_hub_id

    return "://" not in model and not is_hub_id(model)


def model_for_nodes(serving_cfg: Any, nodes: int, storage: str, say: Any = print) -> Any:
    """``serving_cfg`` with a ``model`` every node that loads it can read. The tiny model and the tiny agents
    (like a converted GGUF or a preset's own folder) are built on the driver's node and named by path, but
    the server and the trainers load them on theirs. On a cluster the folder is copied to
    ``<storage>/models/<name>-<digest>`` (``weights.stored_model_name``; skipped when a copy is there) and
    that location is named instead; each process copies it into its node's cache
    (``weights.stored_model_copy``). Storage, not the other ways: it is required on a cluster anyway
    (``jobs.train.storage_problem``) and works for every folder; building the tiny agent again on each
    node would not give the same weights everywhere (its SFT runs on each node's CPU), and the server and
    trainers must hold the same (the first step's importance ratio is 1); refusing the tiny presets would
    leave no way to run the CPU smoke on a cluster (``tests/cluster``). One machine, a Hub id (fetched per
    node at the pinned commit) or a URI: unchanged."""
    from dataclasses import replace

    from actors.serving.weights import stored_model_name
    from actors.storage import is_uri, listing, open_storage, upload

    if nodes <= 1 or not model_folder(serving_cfg.model):
        return serving_cfg
    if problem := model_problem(nodes, serving_cfg.model, storage):
        raise ValueError(problem)
    folder = Path(serving_cfg.model).resolve()
    dest = f"models/{stored_model_name(folder)}"
    store = open_storage(storage)
    stored = set(listing(store, dest))
    if not {f"{dest}/{p.relative_to(folder)}" for p in folder.rglob("*") if p.is_file()} <= stored:
        say(f"copying the model folder {folder} to {storage.rstrip('/')}/{dest}, where every node reads it")
        upload(folder, store, dest)
    location = f"{storage.rstrip('/')}/{dest}" if is_uri(storage) else store.path(dest)
    return replace(serving_cfg, model=location)


def redeploy_guards(cfg: Any, upstream_url: str, shards: Sequence[str], parser: str) -> None:
    """The guard ``shards`` again, in front of ``upstream_url``, with ``cfg``'s guard section and
    temperature: a job on a stack another job started (``jobs.smoke``: the evaluation after the training),
    or the merged comparison's switch to a merged server and back. ``parser``: the server's tool-call
    parser (``tool_grammar``)."""
    how = forwarding(cfg.rollouts, parser)
    for shard in shards:
        guard_app(upstream_url, cfg.guard, shard, how)
