"""The guard's deployment settings (a job config's ``guard`` section): its mode, the port and placement of
its HTTP proxy and its replicas per shard. Pure, so a job's config checks them at load without Ray."""

from __future__ import annotations

from dataclasses import dataclass

from .mode import GuardMode

PROXIES = ("auto", "every_node", "head_only")


def replicas_problem(min_replicas: int, max_replicas: int) -> str | None:
    """What is wrong with a guard's minimum and maximum replicas, or None."""
    if not 1 <= min_replicas <= max_replicas:
        return f"min_replicas={min_replicas}, max_replicas={max_replicas}: need 1 <= minimum <= maximum"
    return None


@dataclass(frozen=True, slots=True)
class GuardSettings:
    mode: GuardMode = GuardMode.ENFORCE
    """``enforce`` (blocked calls become notices, the rollout scores 0), ``monitor`` (every call checked,
    would-be blocks recorded and counted, nothing blocked or zeroed) or ``off``."""
    port: int = 8000
    """Port of the guard's HTTP proxy (Ray Serve) on each node."""
    proxy: str = "auto"
    """Where the HTTP proxy runs: ``every_node`` (each rollout reaches the proxy on its own node at
    127.0.0.1; Ray Serve runs proxies only on the head and on nodes that host a guard replica, so only
    for one node), ``head_only`` (one proxy, at the head node's address, reached from every node) or
    ``auto`` (``every_node`` on one node, ``head_only`` on a cluster of several)."""
    min_replicas: int = 1
    """Replicas of each guard shard (one shard per harness; the minimum when ``max_replicas`` is larger)."""
    max_replicas: int = 1
    """Above ``min_replicas``: Ray Serve autoscales each shard up to this many replicas, which share one
    ledger actor of open rollouts (``serve/book.py``)."""

    def __post_init__(self) -> None:
        problems = []
        try:
            object.__setattr__(self, "mode", GuardMode.parse(self.mode, "mode"))
        except ValueError as exc:
            problems.append(str(exc))
        if not 1 <= self.port <= 65535:
            problems.append(f"port={self.port}: a TCP port, 1-65535")
        if self.proxy not in PROXIES:
            problems.append(f"proxy={self.proxy!r}: choose auto, every_node or head_only")
        if problem := replicas_problem(self.min_replicas, self.max_replicas):
            problems.append(problem)
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def replicas(self) -> tuple[int, int]:
        return (self.min_replicas, self.max_replicas)

    def placement_key(self) -> tuple[int, str, int, int]:
        """What a stack started for one job must share with another job that runs on it (the mode may
        differ: a job redeploys its shards with its own)."""
        return (self.port, self.proxy, self.min_replicas, self.max_replicas)
