"""Which address a server binds and which one others use to reach it, on one machine or across a Ray
cluster's nodes (the only part of serving's set-up that asks Ray)."""

from __future__ import annotations


def node_address(host: str) -> str:
    """``host`` with ``node`` resolved to the IP Ray knows this node by (127.0.0.1 outside a Ray worker)."""
    if host != "node":
        return host
    try:
        import ray

        if ray.is_initialized():
            return ray.util.get_node_ip_address()
    except ImportError:  # pragma: no cover - ray is a dependency
        pass
    return "127.0.0.1"


def bind_address(host: str) -> str:
    """Where a server binds for ``host``: ``node`` is loopback while the Ray cluster has one node (the
    embedded default: nothing leaves the machine's loopback), else this node's IP; others as given."""
    if host == "node" and not _several_nodes():
        return "127.0.0.1"
    return node_address(host)


def _several_nodes() -> bool:
    try:
        import ray
    except ImportError:  # pragma: no cover - ray is a dependency
        return False
    return ray.is_initialized() and len([n for n in ray.nodes() if n.get("Alive")]) > 1


def advertised(host: str) -> str:
    """The address others use to reach a server bound to ``host`` (a wildcard bind is reached by the
    node's IP)."""
    return node_address("node") if host in ("0.0.0.0", "::") else host
